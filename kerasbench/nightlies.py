"""TF and Keras nightlies on the package index: which exist and install here, which one a date names, and the pins
of their environments.

TensorFlow publishes a dev release a day in two builds: `tf-nightly-cpu` (the CPU build; none after 2026-09-05)
and `tf-nightly` (the full build, with CUDA), versioned by the build day (2.22.0.dev20260905); `keras-nightly`
one per build hour (3.16.0.dev2026102704), `tb-nightly` one a day (2.21.0a20260514). The index deletes old ones
and some days have no Linux wheel. A `--tf` value `nightly` is the newest nightly, `nightly:2026-05-14` that
day's, else the nearest earlier one (said so): the day first, then the CPU build where that day has one, else the
full build. A TF nightly's environment pins the keras-nightly and tb-nightly uploaded last before it (what was
current that day), and the newest matrix entry's numpy and scipy. The record says which build ran (worker: the
distribution, GIT_VERSION, this module's note in the environment); compare labels a nightly side by its version,
which carries its day.

Listings come from kerasbench.releases.index (PyPI's simple API in JSON, or a folder of <package>.json files).
"""

from __future__ import annotations

import datetime
import functools
import os
import re
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import releases
from ._compat import NIGHTLY_NOTE, read_note  # noqa: F401 (read_note: the note is read where the worker runs)
from .errors import UsageError
from .versions import NIGHTLY_DEV as _DEV, NIGHTLY_WORD as WORD, is_nightly  # noqa: F401  (nightlies.is_nightly too)

FLAVOURS = {"cpu": "tf-nightly-cpu", "cuda": "tf-nightly"}  # build flavour -> its package
KERAS, TENSORBOARD = "keras-nightly", "tb-nightly"
NOTE_FILE = NIGHTLY_NOTE  # in a nightly environment's folder: which nightly, uploaded when, build (worker reads it)
TF_REPO, KERAS_REPO = "https://github.com/tensorflow/tensorflow", "https://github.com/keras-team/keras"
GAP_DAYS = 4  # days between two nightlies from which a window says where its gap is (a weekend: 3)


@dataclass(frozen=True)
class Nightly:
    """One nightly build on the index: its package, version, first upload time (ISO, UTC) and wheel size."""

    package: str
    version: str
    uploaded: str
    size: int = 0

    @property
    def day(self) -> datetime.date:
        """The build day its version carries (2.22.0.dev20260905: 2026-09-05)."""
        return self.hour.date()

    @property
    def hour(self) -> datetime.datetime:
        """The build hour (keras-nightly's versions carry one; TF's the day: its midnight)."""
        return _built(self.version)

    @property
    def flavour(self) -> str:
        """'cpu' or 'cuda' for a TF nightly, '' for the others."""
        return next((f for f, p in FLAVOURS.items() if p == self.package), "")

    def describe(self) -> str:
        build = f", {self.flavour} build" if self.flavour else ""
        return f"{self.package} {self.version} (uploaded {self.uploaded[:10]}{build})"


def _built(version: str) -> Optional[datetime.datetime]:
    """The build hour a nightly's version carries (.devYYYYMMDD[HH]); None when it carries none or an impossible one
    (.dev20261399): that is no nightly's."""
    found = _DEV.search(version)
    if not found:
        return None
    try:
        return datetime.datetime.strptime(found[1] + (found[2] or "00"), "%Y%m%d%H")
    except ValueError:
        return None


def requested_day(text: str) -> Optional[datetime.date]:
    """None for 'nightly' (the newest), the date of 'nightly:YYYY-MM-DD'; a one-line UsageError otherwise."""
    if text == WORD:
        return None
    value = text[len(WORD) + 1:] if text.startswith(WORD + ":") else ""
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        raise UsageError(f"Invalid nightly. Received: {text!r}. Expected 'nightly' (the newest) or "
                         "'nightly:YYYY-MM-DD' (that day's, else the nearest earlier one).") from None


def listing(package: str, python: str = "3.11", doc: Optional[Dict[str, Any]] = None) -> List[Nightly]:
    """The nightlies of `package` with a wheel installable here on CPython `python`, oldest first."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename
    from packaging.version import InvalidVersion

    doc = doc if doc is not None else _index(package)
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, list):
        raise UsageError(f"The package index's answer for {package} is not a project page (a JSON object with a "
                         f"'files' list): got {type(files if isinstance(doc, dict) else doc).__name__}.")
    supported = releases.supported_tags(python)
    found: Dict[str, Nightly] = {}
    for f in files:  # an entry of another shape is not a wheel this can install: left out, as a yanked one
        name = f.get("filename") if isinstance(f, dict) else None
        if not isinstance(name, str) or not name.endswith(".whl") or f.get("yanked"):
            continue
        try:
            _, version, _, tags = parse_wheel_filename(name)
        except (InvalidWheelFilename, InvalidVersion):
            continue
        uploaded, size = f.get("upload-time") or "", f.get("size") or 0
        if not (tags & supported) or _built(str(version)) is None or not isinstance(uploaded, str) \
                or not isinstance(size, int) or isinstance(size, bool):
            continue
        key = str(version)
        if key not in found or uploaded < found[key].uploaded:
            found[key] = Nightly(package, key, uploaded, size)
    return sorted(found.values(), key=lambda n: releases.version_key(n.version))


@functools.lru_cache(maxsize=None)
def _index(package: str) -> Dict[str, Any]:
    return releases.index(package)


def _newest_by(nightlies: Sequence[Nightly], day: Optional[datetime.date]) -> Optional[Nightly]:
    on_or_before = [n for n in nightlies if day is None or n.day <= day]
    return max(on_or_before, key=lambda n: (n.day, releases.version_key(n.version)), default=None)


def pick_tf(text: str, python: str = "3.11", flavour: str = "",
            docs: Optional[Dict[str, Dict[str, Any]]] = None) -> Tuple[Nightly, str]:
    """(the TF nightly `text` names, a note when it is not what was asked: another day, the full build).

    The day first (the newest nightly on or before the date, of either build), then its build: the CPU build where
    that day has one, else the full build; `flavour` ('cpu'/'cuda') keeps to one build (a bisection compares like
    with like)."""
    day = requested_day(text)
    builds = {f: listing(p, python, (docs or {}).get(p)) for f, p in FLAVOURS.items() if not flavour or f == flavour}
    newest = {f: _newest_by(found, day) for f, found in builds.items()}
    candidates = [n for n in newest.values() if n is not None]
    if not candidates:
        where = " or ".join(FLAVOURS[f] for f in builds)
        oldest = min((n.day for found in builds.values() for n in found), default=None)
        when = f" on or before {day}" if day is not None else ""  # 'nightly' (the newest): no day to name
        raise UsageError(f"No TF nightly{when} for CPython {python} on this platform ({where}; the index "
                         f"keeps them from {oldest or 'no date'}).")
    chosen_day = max(n.day for n in candidates)
    chosen = newest.get("cpu") if newest.get("cpu") and newest["cpu"].day == chosen_day else \
        next(n for n in candidates if n.day == chosen_day)
    notes = []
    if day is not None and chosen.day != day:
        notes.append(f"no nightly of {day} here; the nearest earlier one is {chosen.day}")
    if chosen.flavour == "cuda" and not flavour:
        notes.append("the CPU build has none that day: the full (CUDA) build")
    return chosen, "; ".join(notes)


def pick_keras(text: str, python: str = "3.11", doc: Optional[Dict[str, Any]] = None) -> Tuple[Nightly, str]:
    """(the keras-nightly `text` names: 'nightly', 'nightly:DATE' (the last build of that day or before), or a
    keras-nightly version, a note when it is another day than asked)."""
    found = listing(KERAS, python, doc)
    if _DEV.search(text):
        match = next((n for n in found if n.version == text), None)
        if match is None:
            raise UsageError(f"Unknown {KERAS} version. Received: {text!r}. Expected one of the newest: "
                             f"{', '.join(n.version for n in found[-5:])} (or nightly, nightly:YYYY-MM-DD).")
        return match, ""
    day = requested_day(text)
    chosen = _newest_by(found, day)
    if chosen is None:
        when = f" on or before {day}" if day is not None else ""
        raise UsageError(f"No {KERAS}{when} for CPython {python} on this platform.")
    return chosen, (f"no {KERAS} of {day}; the nearest earlier one is of {chosen.day}"
                    if day is not None and chosen.day != day else "")


def uploaded_before(package: str, moment: str, python: str = "3.11",
                    doc: Optional[Dict[str, Any]] = None) -> Optional[Nightly]:
    """The last nightly of `package` uploaded at or before `moment` (ISO): what a TF nightly of then came with."""
    found = [n for n in listing(package, python, doc) if n.uploaded <= moment]
    return max(found, key=lambda n: n.uploaded, default=None)


def tf_requirements(nightly: Nightly, includes: List[Dict[str, Any]], python: str = "3.11",
                    docs: Optional[Dict[str, Dict[str, Any]]] = None) -> Dict[str, str]:
    """The pins of TF nightly `nightly`'s environment: it, the keras-nightly and tb-nightly uploaded last before
    it, and the newest matrix entry's other pins (numpy, scipy, asv's runner) without its TF and Keras."""
    newest = max(includes, key=lambda i: releases.version_key(i["req"][releases.tf_package(includes)]))
    package = releases.tf_package(includes)
    reqs = {k: v for k, v in newest["req"].items() if k not in (package, "keras") and "tf-keras" not in k}
    reqs[nightly.package] = nightly.version
    for name in (KERAS, TENSORBOARD):
        companion = uploaded_before(name, nightly.uploaded, python, (docs or {}).get(name))
        if companion is None:
            raise UsageError(f"No {name} uploaded before {nightly.describe()}: its environment cannot be pinned.")
        reqs[name] = companion.version
    return reqs


def with_keras_nightly(reqs: Dict[str, str], keras: Nightly) -> Dict[str, str]:
    """A release's pins with keras-nightly `keras` instead of its Keras (environment replaces the release's keras,
    which TF's own requirement brings, after the install)."""
    out = {k: v for k, v in reqs.items() if k != "keras"}
    out[KERAS] = keras.version
    return out


def window(good: str, bad: Nightly, python: str = "3.11",
           doc: Optional[Dict[str, Any]] = None) -> List[Nightly]:
    """The TF nightlies of `bad`'s build after release `good`'s branch cut (the first whose version is above the
    release's minor: 2.22.0.dev… after 2.21.x) up to `bad`, oldest first."""
    major, minor = releases.version_key(good)[:2]
    cut = (major, minor + 1)
    return [n for n in listing(bad.package, python, doc)
            if releases.version_key(n.version)[:2] >= cut and n.day <= bad.day]


def gaps(nightlies: Sequence[Nightly], days: int = GAP_DAYS) -> List[Tuple[datetime.date, datetime.date]]:
    """(last day before, first day after) of each stretch of `days` or more without a nightly wheel here."""
    return [(a.day, b.day) for a, b in zip(nightlies, nightlies[1:]) if (b.day - a.day).days >= days]


_GIT = re.compile(r"-g([0-9a-f]{7,40})$")


def commit_of(git_version: Optional[str]) -> str:
    """The commit a TF build's GIT_VERSION names (v2.21.0-rc1-5-ga481b10260d: a481b10260d), '' when none."""
    found = _GIT.search(git_version or "")
    return found[1] if found else ""


def tf_commits(git_a: Optional[str], git_b: Optional[str]) -> str:
    """The GitHub compare URL between two TF builds' GIT_VERSIONs, '' when either lacks a commit."""
    a, b = commit_of(git_a), commit_of(git_b)
    return f"{TF_REPO}/compare/{a}...{b}" if a and b else ""


def keras_commits(a: datetime.datetime, b: datetime.datetime) -> str:
    """The Keras commits between two keras-nightly build hours (the versions record no commit): GitHub's list of
    the default branch's commits in that span (UTC)."""
    early, late = sorted((a, b))
    return f"{KERAS_REPO}/commits/master/?since={early:%Y-%m-%dT%H:00:00Z}&until={late:%Y-%m-%dT%H:00:00Z}"


# ---------------------------------------------------------------- what a triage bisects


def tf_window(good: str, bad: str, python: str = "3.11",
              docs: Optional[Dict[str, Dict[str, Any]]] = None) -> Tuple[List[str], str, List[str]]:
    """(the versions a TF triage from `good` to the nightly `bad` bisects, oldest first; their build; notes).

    `bad` names a nightly ('nightly', 'nightly:DATE' or a version); `good` a release (then the nightlies after its
    branch cut) or an earlier nightly (of the same build). Every nightly is of `bad`'s build: a release compared
    with full-build nightlies is measured in the full build too (the notes say so). The notes name the gaps."""
    bad_n, note = resolve_tf(bad, python, docs=docs)
    notes = [f"bad end: {bad_n.describe()}" + (f" ({note})" if note else "")]
    doc = (docs or {}).get(bad_n.package)
    if is_nightly(good):
        good_n = resolve_tf(good, python, bad_n.flavour, docs)[0]
        if good_n.day >= bad_n.day:
            raise UsageError(f"A nightly triage goes forward in time: --good {good} ({good_n.day}) is not before "
                             f"--bad {bad} ({bad_n.day}).")
        found = [n for n in listing(bad_n.package, python, doc) if good_n.day <= n.day <= bad_n.day]
        notes.insert(0, f"good end: {good_n.describe()}")
        versions = [n.version for n in found]
    else:
        found = window(good, bad_n, python, doc)
        if not found:
            raise UsageError(f"No {bad_n.package} nightly after TF {good}'s branch cut up to {bad_n.day} on the index.")
        versions = [good] + [n.version for n in found]
        notes.insert(0, f"good end: TF {good}" + (" in the full build (tensorflow, not tensorflow-cpu): the nightlies "
                                                  "of this window are the full build's" if bad_n.flavour == "cuda"
                                                  else " (tensorflow-cpu)"))
        notes.append(f"{len(found)} nightlies after {good}'s branch cut: {found[0].version} … {found[-1].version}")
    for a, b in gaps(found):
        notes.append(f"no {bad_n.package} wheel here between {a} and {b}: a change there is bracketed by both")
    return versions, bad_n.flavour, notes


def resolve_tf(text: str, python: str = "3.11", flavour: str = "",
               docs: Optional[Dict[str, Dict[str, Any]]] = None) -> Tuple[Nightly, str]:
    """(the TF nightly `text` names, a note): 'nightly' or 'nightly:DATE' as pick_tf, or one nightly's version
    (2.22.0.dev20260514 or tf.__version__'s 2.22.0-dev20260514: of the CPU build where both builds have it,
    unless `flavour`)."""
    if text == WORD or text.startswith(WORD + ":"):
        return pick_tf(text, python, flavour, docs)
    exact = text.replace("-", ".")
    for name, package in FLAVOURS.items():
        if not flavour or name == flavour:
            found = next((n for n in listing(package, python, (docs or {}).get(package)) if n.version == exact), None)
            if found:
                return found, ""
    raise UsageError(f"Unknown TF nightly. Received: {text!r}. Expected 'nightly', 'nightly:YYYY-MM-DD' or the "
                     f"version of a nightly the index still has for CPython {python} on this platform.")


def keras_window(good: str, bad: str, python: str = "3.11", keras_doc: Optional[Dict[str, Any]] = None,
                 nightly_doc: Optional[Dict[str, Any]] = None) -> Tuple[List[str], List[str]]:
    """(the Keras versions a triage at one TF bisects from `good` to the keras-nightly `bad`, oldest first; notes).

    `good` is a Keras release (then the keras-nightlies uploaded after it) or an earlier keras-nightly."""
    bad_n, note = pick_keras(bad, python, nightly_doc)
    notes = [f"bad end: {bad_n.describe()}" + (f" ({note})" if note else "")]
    every = listing(KERAS, python, nightly_doc)
    if is_nightly(good):
        good_n = pick_keras(good, python, nightly_doc)[0]
        since, first = good_n.uploaded, [good_n.version]
        notes.insert(0, f"good end: {good_n.describe()}")
    else:
        uploaded = releases.installable(keras_doc if keras_doc is not None else _index("keras"), python).get(good)
        if uploaded is None:
            raise UsageError(f"Unknown Keras release. Received: good={good!r}. Expected a keras release with a wheel "
                             f"for CPython {python}, or nightly[:YYYY-MM-DD].")
        since, first = uploaded, [good]
        notes.insert(0, f"good end: Keras {good} (uploaded {uploaded[:10]})")
    if since >= bad_n.uploaded:
        raise UsageError(f"A nightly triage goes forward in time: --good {good} ({since[:10]}) is not before --bad "
                         f"{bad} ({bad_n.uploaded[:10]}).")
    between = [n for n in every if since < n.uploaded <= bad_n.uploaded and n.version not in first]
    notes.append(f"{len(between)} keras-nightly builds after the good end, up to {bad_n.version}")
    return first + [n.version for n in between], notes


def upload_hour(version: str, python: str = "3.11") -> datetime.datetime:
    """The hour a Keras version was built: a keras-nightly's from its version, a release's from its upload."""
    if _DEV.search(version):
        return Nightly(KERAS, version, "").hour
    uploaded = releases.installable(_index("keras"), python).get(version) or ""
    return datetime.datetime.strptime(uploaded[:13], "%Y-%m-%dT%H") if uploaded else datetime.datetime.min


# ---------------------------------------------------------------- the environment's note, the worker's reading


def nightly_in(reqs: Dict[str, str]) -> Optional[Tuple[str, str]]:
    """(package, version) of the nightly these pins measure (TF's, else Keras'), None for a release."""
    for package in (*FLAVOURS.values(), KERAS):
        if package in reqs:
            return package, reqs[package]
    return None


def write_note(env_path: str, reqs: Dict[str, str], python: str = "3.11") -> None:
    """Write NOTE_FILE into a nightly environment's folder: the nightly, its upload time and build (the record
    carries it: the worker reads it from its interpreter's prefix). Nothing for a release's pins."""
    from .files import write_json

    found = nightly_in(reqs)
    if found is None or os.path.exists(os.path.join(env_path, NOTE_FILE)):
        return
    package, version = found
    known = {n.version: n for n in listing(package, python)}
    nightly = known.get(version) or Nightly(package, version, "")
    note = {**asdict(nightly), "day": nightly.day.isoformat(), "flavour": nightly.flavour or None}
    if package == KERAS:
        note["tf_package"] = next((k for k in reqs if k.startswith(("tensorflow", "tf-nightly"))), None)
    write_json(os.path.join(env_path, NOTE_FILE), note, "the nightly environment's note")


def _dev_release(version: str) -> bool:
    """Whether `version` is a dev release (2.23.0.dev20261026, 2.23.0-dev20261026: PEP 440's spellings of one)."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version).is_devrelease
    except InvalidVersion:
        return False


def check_day_files(paths: Sequence[str]) -> List[str]:
    """`paths`, day files of a nightlies folder (<YYYY-MM-DD>.json, as `atlas --nightlies` lists them), each checked
    to hold a nightly's records: a one-line UsageError naming the file where a record's TensorFlow is a release
    (2.12.1: a release's records saved under a day's name would be a nightly column, and the release columns of
    that version renamed)."""
    from .files import DATA_LIMIT, read_json

    for path in paths:
        day = os.path.basename(path)[:-len(".json")]
        payload = read_json(path, "nightly records file", DATA_LIMIT)
        records = payload.get("records") if isinstance(payload, dict) else None
        for record in records if isinstance(records, list) else ():
            version = ((record.get("environment") or {}) if isinstance(record, dict) else {}).get("tensorflow")
            if not isinstance(version, str):
                continue  # the control loop never imports TF; the loader checks the rest
            if not _dev_release(version):
                raise UsageError(f"Cannot read {path} as the nightly of {day}: its records are of TF {version!r}, a "
                                 "release, not a nightly (.devYYYYMMDD); give release records as records, not in "
                                 "the nightlies folder.")
    return list(paths)
