"""TensorFlow releases on the package registry, and the pins an asv environment needs for each.

The asv matrix (asv.matrix.json) pins the latest patch of every minor release. Triage also
bisects over the patch releases in between; for those, the pins follow the matrix's own rule:
the Keras a TF release shipped with is the newest Keras of its line (2.<minor> up to TF 2.15,
3.x after) uploaded before that TF wheel, and numpy/scipy are those of the same minor's entry.
On another Python than the config's (--python), a numpy or scipy pin without a wheel for it becomes
the newest earlier release that has one.

Releases before the matrix's oldest minor, TF 2.8 to 2.11 (OLDER_MINORS), have wheels for CPython 3.7 to 3.10
only: `--python 3.10`. Their pins are derived as a patch release's are, from the oldest matrix entry: their Keras
by the same rule, numpy below 1.24 (OLDER_PINS). The matrix's entries of their latest patches are on Python 3.10
(axis py3.10: not release entries here) and hold exactly these pins, so asv and `run --tf V --python 3.10` share one
environment (tests/test_axes.py checks it).

The registry is PyPI's simple API in its JSON form (PEP 691/700: every file of a project with its
upload time and yanked flag; the JSON API's `releases` key is deprecated), or a folder of
<package>.json files in that form (tests, offline mirrors): KERASBENCH_PYPI=https://pypi.org/simple
(default) or a path. Versions and wheel tags are read with `packaging`: a release is installable here
when one of its wheels has a tag this platform supports for the Python in question.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any, Dict, FrozenSet, Iterable, List, Optional
import urllib.error
import urllib.request

from .asvconf import config_python, tf_package  # noqa: F401  (pure: read from a config's entries)
from .errors import UsageError
from .versions import version_key  # noqa: F401  (its home is kerasbench.versions: releases.version_key still works)

PYPI = "https://pypi.org/simple"
ACCEPT = "application/vnd.pypi.simple.v1+json"
PYTHONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14")  # the Pythons an error message may name

# TF minors older than the asv matrix's that `run --tf` and triage still give pins for (the bug reports' "worked in
# 2.8/2.9"): no wheel for CPython 3.11, so measured on 3.10. Older ones have no CPython 3.10 wheel.
OLDER_MINORS = ((2, 8), (2, 9), (2, 10), (2, 11))
# What replaces the oldest matrix entry's pins for them: their wheels leave numpy unbounded, and numpy 1.24 removed
# the aliases they still use (np.bool in Keras 2.8-2.11's conv_utils, np.object in TF 2.8's ragged_tensor, np.float
# in their TensorBoard); 1.23.5 is the last numpy before 1.24.
OLDER_PINS = {"numpy": "1.23.5"}
# The releases whose tensorflow-cpu wheels leave protobuf unbounded where every other 2.8-2.11 wheel bounds it below
# 3.20 (`uv pip compile` of each on CPython 3.10 resolves them to protobuf 7, the others to 3.19.6), and protobuf 4 or
# newer cannot import them ("Descriptors cannot be created directly"): their derived pins add UNBOUNDED_PINS, what the
# bounded ones resolve to. Only these: the matrix's 2.8.4 ... 2.11.1 entries and `run --tf` share one environment.
UNBOUNDED_PROTOBUF = ("2.8.0", "2.8.1", "2.9.0")
UNBOUNDED_PINS = {"protobuf": "3.19.6"}


def index(package: str) -> Dict[str, Any]:
    """The registry's simple-API JSON document of `package` (its files: filename, upload-time, yanked)."""
    source = os.environ.get("KERASBENCH_PYPI") or PYPI
    if "://" not in source:
        from .files import DATA_LIMIT, read_json

        return read_json(os.path.join(source, f"{package}.json"), "the package index", DATA_LIMIT)
    url = f"{source.rstrip('/')}/{package}/"
    try:
        request = urllib.request.Request(url, headers={"Accept": ACCEPT})
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.load(response)
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise UsageError(f"Cannot read the package index {url}: {getattr(e, 'reason', None) or e}.") from None


@functools.lru_cache(maxsize=None)
def supported_tags(python: str) -> FrozenSet[Any]:
    """The wheel tags this platform installs for CPython `python` ('3.11'), by packaging.tags."""
    from packaging import tags

    try:
        version = tuple(int(p) for p in python.split("."))
    except ValueError:
        raise UsageError(f"Invalid Python version. Received: python={python!r}. Expected MAJOR.MINOR, e.g. 3.11.") \
            from None
    platforms = list(tags.platform_tags())
    interpreter = "cp" + "".join(str(p) for p in version[:2])
    return frozenset([*tags.cpython_tags(version[:2], platforms=platforms),
                      *tags.compatible_tags(version[:2], interpreter, platforms)])


def _wheels(doc: Dict[str, Any], python: str) -> Iterable[tuple]:
    """(Version, tags, upload time) of every final, not yanked wheel in a simple-API document that allows `python`."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename
    from packaging.version import InvalidVersion

    for f in doc.get("files", []):
        if not f["filename"].endswith(".whl") or f.get("yanked"):
            continue
        try:  # the file's Requires-Python: a py3-none-any wheel may still refuse an old Python
            if f.get("requires-python") and f"{python}.0" not in SpecifierSet(f["requires-python"]):
                continue
        except InvalidSpecifier:
            pass
        try:
            _, version, _, tags = parse_wheel_filename(f["filename"])
        except (InvalidWheelFilename, InvalidVersion):
            continue
        if not (version.is_prerelease or version.is_postrelease or version.local):
            yield version, tags, f.get("upload-time") or ""


def installable(doc: Dict[str, Any], python: str = "3.11") -> Dict[str, str]:
    """{version: first upload time} of the final releases with a wheel installable here on CPython `python`."""
    supported = supported_tags(python)
    found: Dict[str, str] = {}
    for version, tags, uploaded in _wheels(doc, python):
        if tags & supported:
            key = str(version)
            found[key] = min(found.get(key, uploaded), uploaded)
    return found


def pythons_for(doc: Dict[str, Any], version: str) -> List[str]:
    """The Pythons (of PYTHONS) for which release `version` of `doc` has a wheel installable here."""
    return [p for p in PYTHONS if version in installable(doc, p)]


def check_python(package: str, version: str, python: str, doc: Optional[Dict[str, Any]] = None,
                 hint: bool = False) -> None:
    """UsageError naming the Pythons it has when `package` `version` has no wheel here for Python `python`;
    with `hint` (the TF release itself: --python decides), it ends with the --python to give."""
    doc = doc or index(package)
    if version not in installable(doc, python):
        has = pythons_for(doc, version)
        advice = f" Give --python {has[-1]} (the newest it has)." if hint and has else ""
        raise UsageError(f"{package} {version} has no wheel for Python {python} on this platform; "
                         f"it has: {', '.join(has) or 'none'}.{advice}")


def keras_for(tf_version: str, tf_uploaded: str, keras_doc: Dict[str, Any], python: str = "3.11") -> str:
    """The Keras a TF release shipped with: the newest of its line uploaded before the TF wheel."""
    major, minor = version_key(tf_version)[:2]
    line = f"2.{minor}." if (major, minor) <= (2, 15) else "3."
    wheels = installable(keras_doc, python)
    candidates = {v: t for v, t in wheels.items() if v.startswith(line)}
    before = [v for v, t in candidates.items() if t <= tf_uploaded]
    pool = before or list(candidates)  # a TF uploaded before its Keras (2.x): the first of the line
    if not pool:
        raise UsageError(f"No Keras {line}x release found for TF {tf_version} on the package index.")
    return max(pool, key=version_key) if before else min(pool, key=version_key)


def older_minors(includes: List[Dict[str, Any]], package: Optional[str] = None) -> List[tuple]:
    """The OLDER_MINORS (major, minor) the config pins no entry of and that are older than all its entries."""
    package = package or tf_package(includes)
    pinned = [version_key(i["req"][package])[:2] for i in includes if package in i.get("req", {})]
    oldest = min(pinned) if pinned else (0, 0)
    return [m for m in OLDER_MINORS if m < oldest]


def requirements_for(version: str, includes: List[Dict[str, Any]], package: Optional[str] = None,
                     tf_doc: Optional[Dict[str, Any]] = None, keras_doc: Optional[Dict[str, Any]] = None,
                     python: Optional[str] = None) -> Dict[str, str]:
    """asv `req` pins for TF `version` on Python `python` (default the config's): its entry, or derived for a patch
    (from its minor's entry; for a minor of older_minors, from the oldest entry with OLDER_PINS)."""
    package = package or tf_package(includes)
    home = config_python(includes)
    python = python or home
    entry = next((i for i in includes if i.get("req", {}).get(package) == version), None)
    reqs, made_for = (dict(entry["req"]), str(entry.get("python") or home)) if entry else (None, home)
    if reqs is None:
        minor = version_key(version)[:2]
        same_minor = [i["req"] for i in includes if version_key(i["req"][package])[:2] == minor]
        older = not same_minor and minor in older_minors(includes, package)
        if older:  # the oldest entry's pins, numpy and the like as OLDER_PINS says
            oldest = min((i["req"] for i in includes), key=lambda req: version_key(req[package]))
            same_minor = [{**oldest, **{k: v for k, v in OLDER_PINS.items() if k in oldest}}]
        if not same_minor:
            known = ", ".join(sorted((i["req"][package] for i in includes), key=version_key))
            before = older_minors(includes, package)
            also = f", and the patch releases of {'.'.join(map(str, before[0]))} to " \
                   f"{'.'.join(map(str, before[-1]))}" if before else ""
            raise UsageError(f"TF {version}: no entry of its minor release in the asv config (it has {known}{also}).")
        tf_doc = tf_doc or index(package)
        uploaded = installable(tf_doc, python).get(version)
        if uploaded is None:
            check_python(package, version, python, tf_doc, hint=True)  # names the Pythons it has, if any
            raise UsageError(f"TF {version}: no installable {package} release on the package index "
                             f"(CPython {python}, this platform).")
        reqs = dict(same_minor[0])
        reqs[package] = version
        reqs["keras"] = keras_for(version, uploaded, keras_doc or index("keras"), python)
        if version in UNBOUNDED_PROTOBUF:
            reqs.update(UNBOUNDED_PINS)
    if python != made_for:
        reqs = for_python(reqs, python, package, tf_doc)
    return reqs


def for_python(reqs: Dict[str, str], python: str, package: str,
               tf_doc: Optional[Dict[str, Any]] = None) -> Dict[str, str]:
    """The pins `reqs` on Python `python`: TF and Keras must have a wheel for it (else UsageError naming the
    Pythons they have); a numpy or scipy pin without one becomes the newest earlier release that has one."""
    from packaging.version import Version

    check_python(package, reqs[package], python, tf_doc, hint=True)
    out = dict(reqs)
    for name, pinned in reqs.items():
        if name == package or name.startswith("pip+"):  # asv_runner: pure Python, any 3.x
            continue
        doc = index(name)
        there = installable(doc, python)
        if pinned in there:
            continue
        if name == "keras":  # what is measured: never substituted
            check_python(name, pinned, python, doc)
        earlier = [v for v in there if Version(v) <= Version(pinned)]
        if not earlier:
            raise UsageError(f"TF {reqs[package]} on Python {python}: {name} has no release up to {pinned} "
                             f"with a wheel for Python {python} on this platform.")
        out[name] = max(earlier, key=Version)
    return out


def candidates(good: str, bad: str, includes: List[Dict[str, Any]], patches: bool = True, package: Optional[str] = None,
               tf_doc: Optional[Dict[str, Any]] = None, python: Optional[str] = None) -> List[str]:
    """The TF versions from `good` to `bad` (inclusive, oldest first) that triage may try (on Python `python`).

    patches=False: only the versions the asv config pins (the latest patch of each minor).
    """
    package = package or tf_package(includes)
    pinned = {i["req"][package] for i in includes}
    older = older_minors(includes, package)
    if not any(version_key(v)[:2] in older for v in (good, bad)):
        older = []  # below every pinned minor: only an end among them brings them in (read from the index)
    here = python or config_python(includes)
    found: Dict[str, str] = {}
    if patches or older:
        tf_doc = tf_doc or index(package)
        found = installable(tf_doc, here)
    if patches:
        minors = {version_key(p)[:2] for p in pinned} | set(older)  # the releases the config can give pins for
        known = {v for v in found if version_key(v)[:2] in minors}
    else:  # the pinned ones, and the latest patch of each older minor this Python has
        latest = {}
        for v in found:
            if version_key(v)[:2] in older:
                latest[version_key(v)[:2]] = max(latest.get(version_key(v)[:2], v), v, key=version_key)
        known = pinned | set(latest.values())
    for name, value in (("good", good), ("bad", bad)):
        if value not in known:
            if tf_doc and version_key(value)[:2] in older and pythons_for(tf_doc, value):
                check_python(package, value, here, tf_doc, hint=True)  # a release, on other Pythons only
            raise UsageError(f"Unknown TF version. Received: {name}={value!r}. Expected one of: "
                             f"{', '.join(sorted(known, key=version_key))}.")
    low, high = sorted((good, bad), key=version_key)
    between = sorted((v for v in known if version_key(low) <= version_key(v) <= version_key(high)), key=version_key)
    return between if version_key(good) <= version_key(bad) else between[::-1]


def tf_keras_for(tf_version: str, python: str = "3.11", doc: Optional[Dict[str, Any]] = None) -> str:
    """The tf-keras release of TF `tf_version`'s minor (tf-keras 2.16.x for TF 2.16): the newest installable one."""
    major, minor = version_key(tf_version)[:2]
    found = [v for v in installable(doc or index("tf-keras"), python) if version_key(v)[:2] == (major, minor)]
    if not found:
        raise UsageError(f"No tf-keras {major}.{minor}.x release for TF {tf_version} on the package index "
                         f"(CPython {python}, this platform).")
    return max(found, key=version_key)


def package_versions(package: str, good: str, bad: str, python: str = "3.11",
                     doc: Optional[Dict[str, Any]] = None) -> List[str]:
    """The final releases of `package` from `good` to `bad` (inclusive, in that direction) installable on `python`."""
    known = installable(doc or index(package), python)
    for name, value in (("good", good), ("bad", bad)):
        if value not in known:
            near = sorted(known, key=version_key)
            raise UsageError(f"Unknown {package} version. Received: {name}={value!r}. Expected one of: "
                             f"{', '.join(near[-30:])}{' (the newest 30)' if len(near) > 30 else ''}.")
    low, high = sorted((good, bad), key=version_key)
    between = sorted((v for v in known if version_key(low) <= version_key(v) <= version_key(high)), key=version_key)
    return between if version_key(good) <= version_key(bad) else between[::-1]
