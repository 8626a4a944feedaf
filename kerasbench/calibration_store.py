"""Stored calibrations: where they live, their environment key, reading and saving them (which floor a run is
judged with is kerasbench.rule.floors').

`kerasbench calibrate` (kerasbench.calibration) measures which leak rates an allocator can detect and
stores the result here, one JSON file per *environment key*: the allocator, its library's version (glibc
2.36, gperftools 2.10, jemalloc 5.3.0), the machine architecture and page size (RSS is counted in pages)
and the Python version (pymalloc's arenas). A calibration fits a run when its key equals the run's and it
covers the run's iteration count (a count <= the run's). The host name is not part of the key: a fresh
install on another machine with the same key uses the calibrations shipped in docs/calibration/.

Where a run looks, in order: the user's folder ($KERASBENCH_CALIBRATION, else
~/.cache/kerasbench/calibration), an old host-keyed file there (schema 1: <host>-<allocator>.json), then
the shipped folder. This module only reads and writes those files: it runs nothing (session.ensure_calibration
measures when nothing fits).
"""

import copy
import functools
import math
import os
import platform
import re
import subprocess
import sys
from typing import Any, List, Optional, Tuple

from .errors import UsageError
from .files import CONFIG_LIMIT, ReadError, clone_dir, make_folder, read_json, user_cache, write_json
from .units import max_growth_bytes, size_text

ENV_VAR = "KERASBENCH_CALIBRATION"  # the user's folder of calibrations (read first, and written)
NO_CALIBRATE_VAR = "KERASBENCH_NO_CALIBRATE"  # set (to anything but 0/empty): never calibrate on the fly
SCHEMA = 2  # 2: keyed by environment (KEY_FIELDS); 1: keyed by host name (still loads)
SCHEMAS = (1, 2)
KEY_FIELDS = ("allocator", "library", "machine", "page_size", "python")


def shipped(clone: str = clone_dir()) -> str:
    """The shipped calibrations: a clone's (or an editable install's) docs/calibration; in an installed wheel, where
    no clone is beside the package (asv's environments), the same files as the package kerasbench.shipped_calibration
    (pyproject.toml maps docs/calibration there). Before, asv-built environments found none and judged every pair at
    the 64 KiB default floors."""
    docs = os.path.join(clone, "docs", "calibration")
    return docs if os.path.isdir(docs) else os.path.join(clone, "kerasbench", "shipped_calibration")


SHIPPED = shipped()


def directory() -> str:
    """The user's calibrations: $KERASBENCH_CALIBRATION, else ~/.cache/kerasbench/calibration."""
    if os.environ.get(ENV_VAR):
        return os.environ[ENV_VAR]
    return user_cache("calibration")


def folders() -> List[str]:
    """Where calibrations are looked for, in order: the user's folder, then the shipped one (if different)."""
    mine = directory()
    return [mine] + ([SHIPPED] if os.path.abspath(SHIPPED) != os.path.abspath(mine) else [])


# --- the environment key -----------------------------------------------------------------------------

# In a process with the allocator preloaded, print its version (the parent never loads another malloc).
_VERSION_CODE = """
import ctypes, sys
lib = ctypes.CDLL(None)
if sys.argv[1] == "tcmalloc":
    lib.tc_version.restype = ctypes.c_char_p
    print(lib.tc_version(None, None, None).decode())
else:
    p, n = ctypes.c_char_p(), ctypes.c_size_t(ctypes.sizeof(ctypes.c_char_p))
    print("jemalloc " + p.value.decode().split("-")[0] if lib.mallctl(b"version", ctypes.byref(p), ctypes.byref(n),
          None, 0) == 0 else "jemalloc ?")
"""


@functools.lru_cache(maxsize=None)
def library(allocator: str) -> str:
    """The allocator library's name and version as the worker will run it, e.g. 'glibc 2.36', 'gperftools 2.10'."""
    from . import allocators

    a = allocators.get_allocator(allocator)
    if not a.preload:
        try:
            return os.confstr("CS_GNU_LIBC_VERSION") or "libc ?"
        except (ValueError, OSError):
            return "libc ?"
    env = allocators.apply_env(allocator, dict(os.environ))
    try:
        out = subprocess.run([sys.executable, "-S", "-c", _VERSION_CODE, a.detects], env=env, capture_output=True,
                             text=True, timeout=30)
        text = out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        text = ""
    return text or f"{a.detects} ? ({os.path.basename(os.path.realpath(a.preload))})"


@functools.lru_cache(maxsize=None)
def python_version(python: str = "") -> str:
    """'3.10' of the Python the workers run: `python` a version ('3.10.13', a record's environment says it), an
    interpreter's path (run --tf's environment: asked once), or '' for this one; '?' (fits no calibration) when the
    interpreter cannot say."""
    found = re.match(r"(\d+\.\d+)(\.|$)", python)
    if found:
        return found.group(1)
    if not python or os.path.realpath(python) == os.path.realpath(sys.executable):
        return "%d.%d" % sys.version_info[:2]
    try:
        out = subprocess.run([python, "-S", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    return out if re.fullmatch(r"\d+\.\d+", out) else "?"


def environment_key(allocator: str, python: str = "") -> dict:
    """What a calibration of `allocator` must share with the workers to fit (KEY_FIELDS): this machine's, and the
    Python the workers run (`python`: python_version's; '' this process's). A worker on another Python (run --tf X
    --python 3.10 from a 3.11 parent) is judged by its own Python's calibration, as inside that environment."""
    return {
        "allocator": allocator,
        "library": library(allocator),
        "machine": platform.machine() or "?",
        "page_size": os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096,
        "python": python_version(python),
    }


def describe(key: dict, allocator: bool = True) -> str:
    """A key as one phrase: 'glibc on glibc 2.36, x86_64 (4 KiB pages), Python 3.11' (without 'glibc on ')."""
    return ((f"{key.get('allocator')} on " if allocator else "") + f"{key.get('library')}, {key.get('machine')} "
            f"({int(key.get('page_size') or 0) // 1024} KiB pages), Python {key.get('python')}")


def file_name(key: dict) -> str:
    """The stored file's name for `key`: e.g. glibc-glibc_2.36-x86_64-py3.11.json."""
    lib = re.sub(r"[^A-Za-z0-9.]+", "_", key["library"]).strip("_")
    pages = "" if key["page_size"] == 4096 else f"-{key['page_size'] // 1024}k"
    return f"{key['allocator']}-{lib}-{key['machine']}{pages}-py{key['python']}.json"


def path_for(allocator: str, python: str = "") -> str:
    """Where `kerasbench calibrate` stores the calibration of `allocator` on this machine (the user's folder), for
    workers on `python` (environment_key's)."""
    return os.path.join(directory(), file_name(environment_key(allocator, python)))


def legacy_path(allocator: str) -> str:
    """Where schema-1 calibrations were stored: <user's folder>/<host>-<allocator>.json."""
    return os.path.join(directory(), f"{platform.node() or 'machine'}-{allocator}.json")


# --- reading and writing -----------------------------------------------------------------------------

def save(calibration: dict, path: str) -> str:
    """Write `calibration` to `path` atomically (its folder made if missing). A link there onto a shipped calibration
    (the clone's docs/calibration, when the user's folder is another) is refused: the write would replace that file
    through it, not the user's."""
    check_not_shipped(path)
    make_folder(os.path.dirname(os.path.abspath(path)), "calibration")
    return write_json(path, calibration, "calibration")


def check_not_shipped(path: str) -> None:
    """A UsageError when `path` is a link onto a shipped calibration (the clone's docs/calibration, when the user's
    folder is another): a write there would replace that file through it (`kerasbench calibrate` says so before
    measuring; save, before writing)."""
    if os.path.islink(path) and os.path.abspath(SHIPPED) != os.path.abspath(directory()):
        target = os.path.realpath(path)
        if os.path.dirname(target) == os.path.realpath(SHIPPED):
            raise UsageError(f"Cannot write calibration to {path}: it links to {target}, a shipped calibration, "
                             "which the write would replace; remove the link.")


def merged(existing: dict, made: dict) -> dict:
    """`made` (a calibration just measured on the fly) added to `existing` (the file it would have replaced): every
    count of `existing` kept as it is (a fuller calibration, `kerasbench calibrate`'s 20 runs, is not replaced by a
    one-off's 10), the counts only `made` has added (floors, heap floors and their reports); `added` lists what was
    added, when and with how many runs. The other fields are `existing`'s."""
    out = dict(existing)

    def union(old: Optional[dict], new: Optional[dict]) -> dict:
        both = {**(new or {}), **(old or {})}
        return dict(sorted(both.items(), key=lambda item: int(item[0])))

    for table in ("floors", "heap_floors"):
        if table in existing or table in made:
            out[table] = union(existing.get(table), made.get(table))
    for name in ("report", "heap_report"):
        old, new = existing.get(name), made.get(name)
        if isinstance(old, dict) and isinstance(new, dict):
            out[name] = {**old, "by_iterations": union(old.get("by_iterations"), new.get("by_iterations")),
                         "iterations": sorted({*map(int, old.get("iterations") or ()),
                                               *map(int, new.get("iterations") or ())})}
        elif isinstance(new, dict):
            out[name] = new
    counts = sorted(set(made.get("floors") or {}) - set(existing.get("floors") or {}), key=int)
    out["added"] = list(existing.get("added") or []) + [
        {"counts": [int(n) for n in counts], "runs": made.get("runs"), "created": made.get("created"),
         "protocol": made.get("protocol")}]
    return out


def _counts(calibration: dict, table: str = "floors") -> set:
    return {int(n) for n in calibration.get(table) or {}}


def _same_kind(existing: Optional[dict], made: dict) -> bool:
    """Whether `existing` (the file a calibration would be written over) is of `made`'s kind: a keyed calibration of
    the same environment (as an on-the-fly calibration merges into)."""
    return bool(existing) and existing.get("schema", 0) >= 2 and existing.get("key") == made.get("key")


def _runs(calibration: dict) -> int:
    runs = calibration.get("runs")
    return runs if isinstance(runs, int) and not isinstance(runs, bool) else 0


def refused_over(existing: Optional[dict], made: dict, path: str) -> Optional[str]:
    """Why `kerasbench calibrate` must not write `made` (so far its runs, counts, key and protocol) over `existing`,
    the calibration at `path`: fewer runs, and no count `existing` lacks (nothing it would add; said before any
    measuring). None when it may: it replaces, or is merged into, `existing` (combined)."""
    if not _same_kind(existing, made) or _runs(made) >= _runs(existing) or not _counts(made) <= _counts(existing):
        return None
    counts = ", ".join(map(str, sorted(_counts(made))))
    return (f"Cannot write calibration to {path}: it holds a {_runs(existing)}-run calibration with every count asked "
            f"({counts}), which {_runs(made)} run(s) would replace with less; give --runs {_runs(existing)} or more, "
            "or counts it lacks (they are added to it), or remove the file.")


def combined(existing: Optional[dict], made: dict) -> Tuple[dict, str]:
    """(what `kerasbench calibrate` writes over `existing` with `made`, how it is said): `made` itself where it has as
    many runs or more and every count of `existing` (in each table: floors, heap floors); else the two merged
    (`merged`), the one with more runs (`made` on a tie) kept whole and the other's counts it lacks added: a short
    calibration never replaces a longer one's counts."""
    if not _same_kind(existing, made):
        return made, "wrote"
    more = _runs(made) >= _runs(existing)
    if more and all(_counts(existing, t) <= _counts(made, t) for t in ("floors", "heap_floors")):
        return made, "wrote"
    if more:
        out = merged(made, existing)
        out["added"] = list(existing.get("added") or []) + out["added"]
        kept = sorted(_counts(existing) - _counts(made))
        return out, (f"wrote (kept the {_runs(existing)}-run calibration's count(s) it did not measure: "
                     f"{', '.join(map(str, kept)) or 'heap floors'}) to")
    added = sorted(_counts(made) - _counts(existing))
    return merged(existing, made), (f"added its count(s) {', '.join(map(str, added)) or '(none)'} to the "
                                    f"{_runs(existing)}-run calibration in")


# (path, allocator) -> (the file's stat: inode, size, mtime; its checked calibration): re-judging a folder of records
# looks its floors up once per record (atlas --reference: ~3,600 reads of a handful of files, 4 of its 44 s)
_READ: dict = {}


def read(path: str, allocator: str) -> Optional[dict]:
    """The calibration of `allocator` in the file `path`, None if there is no such file; UsageError if it is bad.
    A file read before and unchanged since (same inode, size and modification time) is not parsed again."""
    try:
        st = os.stat(path)
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        stamp = None
    cached = _READ.get((path, allocator))
    if stamp and cached and cached[0] == stamp:
        return copy.deepcopy(cached[1])  # callers may change what they are given
    try:  # a regular file of at most CONFIG_LIMIT: a FIFO would hang every run
        data = read_json(path, "calibration file", CONFIG_LIMIT, missing=None)
    except ReadError as e:
        problem = e.problem
    else:
        if data is None:
            return None
        problem = _problem(data, allocator)
        if not problem:
            if stamp:
                _READ[(path, allocator)] = (stamp, copy.deepcopy(data))
            return data
    raise UsageError(f"Bad calibration file {path}: {problem}. "
                     f"Delete it or run `kerasbench calibrate --allocator {allocator}`.")


def _problem(data: Any, allocator: str) -> Optional[str]:
    if not isinstance(data, dict) or data.get("schema") not in SCHEMAS:
        return f"expected a JSON object with schema {' or '.join(map(str, SCHEMAS))}"
    if data.get("allocator") != allocator:
        return f"it is for allocator {data.get('allocator')!r}, not {allocator!r}"
    if data["schema"] >= 2 and not (isinstance(data.get("key"), dict) and set(KEY_FIELDS) <= set(data["key"])):
        return f"no environment key ({', '.join(KEY_FIELDS)})"
    floors = data.get("floors")
    if not isinstance(floors, dict) or not floors:
        return "no floors"
    top = max_growth_bytes()  # every floor a finite number of bytes up to the machine's memory: Infinity, or 1e280,
    for name in ("floors", "heap_floors"):  # would pass any leak flat
        table = data.get(name)
        if table is None and name != "floors":
            continue
        if not isinstance(table, dict):
            return f"{name} is not an object"
        for n, floor in table.items():
            if not str(n).isdigit() or not (floor is None or (isinstance(floor, (int, float))
                                                             and not isinstance(floor, bool)
                                                             and math.isfinite(floor) and floor >= 0)):
                return f"bad {'heap ' if name == 'heap_floors' else ''}floor {n!r}: {floor!r}"
            if floor is not None and floor > top:
                return (f"bad {'heap ' if name == 'heap_floors' else ''}floor {n!r}: {floor!r} bytes/iteration, above "
                        f"this machine's memory ({size_text(top)}): no floor, every leak would read flat under it")
    return None


def candidates(allocator: str, python: str = "") -> List[Tuple[str, dict]]:
    """Every calibration that fits `allocator` here (workers on `python`: environment_key's), best first: (path,
    calibration).

    The user's folder first (its keyed files, then an old host-keyed one), then the shipped folder. Files of
    other allocators are not opened; a bad file of this allocator is a UsageError naming it.
    """
    key = environment_key(allocator, python)
    found = []
    for index, folder in enumerate(folders()):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if name.endswith(".json") and name.startswith(allocator + "-"):
                path = os.path.join(folder, name)
                data = read(path, allocator)
                if data and data["schema"] >= 2 and all(data["key"].get(k) == key[k] for k in KEY_FIELDS):
                    found.append((path, data))
        if index == 0 and key["python"] == python_version():  # an old file of this host: this Python's
            old = read(legacy_path(allocator), allocator) if os.path.lexists(legacy_path(allocator)) else None
            if old and old["schema"] == 1:  # made on this host by an earlier kerasbench
                found.append((legacy_path(allocator), old))
    return found


def covers(calibration: dict, iterations: int) -> Optional[int]:
    """The calibrated count a run of `iterations` uses (the largest <= it), None if every count is larger."""
    counts = [int(n) for n in calibration["floors"] if int(n) <= iterations]
    return max(counts) if counts else None


def ranked(allocator: str, iterations: int, python: str = "") -> List[Tuple[str, dict, int]]:
    """Every calibration fitting `allocator` at `iterations`, best first: (path, calibration, count).

    The best is the one calibrated at the count nearest below `iterations` (the largest count <= it); at equal
    counts, the first of `candidates` (the user's folder before the shipped one). A calibration made once for a run
    of 3 iterations (counts the shipped one has none of) does not then judge every longer run at its 10 runs.
    """
    fitting = [(path, data, covers(data, iterations)) for path, data in candidates(allocator, python)]
    return sorted((f for f in fitting if f[2] is not None), key=lambda f: -f[2])  # stable: ties keep their order


def find(allocator: str, iterations: int, python: str = "") -> Tuple[Optional[str], Optional[dict], Optional[int]]:
    """(path, calibration, count) of the best calibration fitting `allocator` at `iterations` for workers on
    `python` (ranked); Nones if none."""
    found = ranked(allocator, iterations, python)
    return found[0] if found else (None, None, None)


def load(allocator: str, path: Optional[str] = None, python: str = "") -> Optional[dict]:
    """The calibration in `path`, or the best one fitting `allocator` here (workers on `python`; any count); None if
    there is none."""
    if path is not None:
        return read(path, allocator)
    found = candidates(allocator, python)
    return found[0][1] if found else None


def no_calibrate() -> bool:
    """Whether $KERASBENCH_NO_CALIBRATE forbids calibrating on the fly."""
    return os.environ.get(NO_CALIBRATE_VAR, "") not in ("", "0")


def _where(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home):] if home not in ("", "/") and path.startswith(home + os.sep) else path


