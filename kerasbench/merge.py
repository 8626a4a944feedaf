"""`kerasbench merge SRC... DEST`: the union of asv results trees and kerasbench records trees.

What a fan-out's jobs leave (each its own `.asv/results/<machine>/` and `.asv/records/<machine>/`) becomes
one tree that `kerasbench publish`, `compare` and `report` read. Each SRC and DEST is an asv folder
(one holding `results/` and/or `records/`, like `.asv`), or a folder whose `.asv/` is one (a clone).

The rules: a file only one side has is copied; the same file with the same content (as JSON) is left
alone, so merging twice changes nothing; the same results or records file with different content is a
conflict: the merge stops with one line naming it and writes nothing. Two files asv rewrites on every
run are not results: a machine's `machine.json` (the newest copy is kept) and `results/benchmarks.json`
(the union of the benchmarks, the newest file's entry where they differ); the summary says which.

Nothing outside a source is copied: a link in a source is followed only where it stays inside that source (as tar's
`data` filter extracts), else the merge stops naming it, before anything is written (DEST is what gets committed to
the history branch and published: a link to a file of the user's would publish it). DEST is written whole or not at
all: every file first into a hidden folder in DEST (`.kerasbench-merge-*`), then renamed into place; a failure (a full
disk) removes what was written and restores what was replaced, and is one line. A hidden folder a killed merge left
is removed by the next merge into that DEST.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import Any, Dict, List, Optional, Tuple

from .asvconf import json_kind
from .errors import UsageError
from .files import DATA_LIMIT, _umask, clean_stale_folders, inside, parse_json, read_text

TREES = ("results", "records")  # what is merged; html is made again by `kerasbench publish`
REWRITTEN = ("machine.json", "benchmarks.json")  # asv writes these on every run: newest (or union), not a conflict
# The format of each (asv 0.6: Machine.api_version, Benchmarks.api_version): a newer one is a newer asv's file,
# which the asv that publishes the merged tree cannot read.
ASV_VERSIONS = {"machine.json": 1, "benchmarks.json": 2}


def asv_folder(path: str, dest: bool = False) -> str:
    """The asv folder `path` names: itself when it holds results/ or records/, else its .asv/ (a clone)."""
    if any(os.path.isdir(os.path.join(path, t)) for t in TREES):
        return path
    if os.path.isdir(os.path.join(path, ".asv")) or (dest and os.path.isfile(os.path.join(path, "asv.conf.json"))):
        return os.path.join(path, ".asv")
    if dest and not os.path.exists(path):
        return path
    if dest and os.path.isdir(path) and not os.listdir(path):
        return path
    what = "DEST" if dest else "SRC"
    raise UsageError(f"Not an asv folder ({what}): {path} has neither results/ nor records/ nor .asv/; "
                     "give the .asv folder of a run, or a clone that holds one.")


def _files(folder: str) -> List[str]:
    """Relative paths of every file under folder/results and folder/records (hidden ones and temp files left out)."""
    found = []
    for tree in TREES:
        top = os.path.join(folder, tree)
        for root, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            found += [os.path.relpath(os.path.join(root, f), folder) for f in sorted(files) if not f.startswith(".")]
    return found


def _read(path: str, source: Optional[str] = None) -> Tuple[str, Any]:
    """(text, parsed JSON or None) of a file (files.read_text: a regular file of at most DATA_LIMIT, so a link to
    /dev/zero or a FIFO in a source is refused, not read); a one-line UsageError when it cannot be read. A file of
    a `source` must lie inside it, links resolved: a link out of it is refused, not followed."""
    if source is not None and not inside(path, source):
        raise UsageError(f"Cannot merge {path}: it links outside its source {source} (to {os.path.realpath(path)}); "
                         "merge copies only what lies inside its sources: replace the link by the file, or remove it. "
                         "Nothing written.")
    text = read_text(path, "file to merge", DATA_LIMIT)
    return text, parse_json(text, "file to merge", path, invalid=None)


def check_rewritten(path: str, parsed: Any) -> None:
    """A source's machine.json or benchmarks.json as asv reads it: a JSON object whose 'version' (when it has one) is
    asv's format; a one-line UsageError naming the file otherwise. The merge keeps the newest copy (or the union):
    a corrupt one would be kept and fail every `kerasbench publish` of the merged tree, far from its cause."""
    name, expected = os.path.basename(path), ASV_VERSIONS[os.path.basename(path)]
    fix = "fix or delete it (asv writes it again on its next run), or merge without that folder"
    if parsed is None:
        raise UsageError(f"Cannot merge {path}: it is not JSON (truncated or corrupt?); {fix}.")
    if not isinstance(parsed, dict):
        raise UsageError(f"Cannot merge {path}: it is {json_kind(parsed)}, not asv's {name} (an object); {fix}.")
    version = parsed.get("version", expected)
    if version != expected or isinstance(version, bool):
        newer = isinstance(version, int) and not isinstance(version, bool) and version > expected
        why = "a newer asv wrote it: update asv, which publishes the merged tree" if newer else f"{fix}"
        raise UsageError(f"Cannot merge {path}: its version is {json.dumps(version)[:40]}, asv's {name} is "
                         f"version {expected}; {why}.")


def _same(a: Tuple[str, Any], b: Tuple[str, Any]) -> bool:
    return a[0] == b[0] or (a[1] is not None and a[1] == b[1])


Write = Tuple[str, float]  # (text, the modification time it came with)


def plan(sources: List[str], dest: str) -> Tuple[Dict[str, Write], List[str]]:
    """({relative path: (text, mtime)}, notes): what merging `sources` into `dest` writes; UsageError on a conflict."""
    folders = [asv_folder(s) for s in sources]
    target = asv_folder(dest, dest=True)
    real = os.path.realpath(target)
    for src, folder in zip(sources, folders):
        if os.path.realpath(folder) == real:
            raise UsageError(f"Cannot merge {src} into {dest}: it is the destination.")
        if inside(target, folder) or inside(folder, target):  # the merge would write into what it reads
            which = "inside" if inside(target, folder) else "around"
            raise UsageError(f"Cannot merge {src} into {dest}: the destination {target} is {which} the source "
                             f"{folder}; give folders apart.")
    # every version of every file: (where, mtime, (text, json)); the destination's first
    versions: Dict[str, List[Tuple[str, float, Tuple[str, Any]]]] = {}
    for label, folder in [(dest, target)] + list(zip(sources, folders)):
        for rel in (_files(folder) if os.path.isdir(folder) else []):
            path = os.path.join(folder, rel)
            read = _read(path, None if folder == target else folder)
            if folder != target and rel.startswith("results" + os.sep) and os.path.basename(rel) in REWRITTEN:
                check_rewritten(path, read[1])  # what asv reads of a source (the destination's is the user's own)
            versions.setdefault(rel, []).append((label, os.path.getmtime(path), read))
    writes: Dict[str, Write] = {}
    notes: List[str] = []
    conflicts: List[str] = []
    have_dest = set(_files(target)) if os.path.isdir(target) else set()
    for rel, found in sorted(versions.items()):
        name = os.path.basename(rel)
        if name in REWRITTEN:
            text, mtime, note = _rewritten(rel, found)
            if note:
                notes.append(note)
            parsed = parse_json(text, "file to merge", rel, invalid=None)  # the destination's may not be JSON
            if rel not in have_dest or not _same(_read(os.path.join(target, rel)), (text, parsed)):
                writes[rel] = (text, mtime)
            continue
        first = found[0]
        other = next((f for f in found[1:] if not _same(first[2], f[2])), None)
        if other is not None:
            conflicts.append(f"{rel} differs between {first[0]} and {other[0]}")
            continue
        if rel not in have_dest:
            writes[rel] = (first[2][0], first[1])
    if conflicts:
        more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
        raise UsageError(f"Conflicting results, nothing written: {conflicts[0]}{more}; the same machine, commit "
                         "and environment measured twice: keep one (delete the other) or give the runs other "
                         "machine names.")
    return writes, notes


def _rewritten(rel: str, found: List[Tuple[str, float, Tuple[str, Any]]]) -> Tuple[str, float, Optional[str]]:
    """(text, mtime, note) of machine.json (the newest copy) or benchmarks.json (the union, newest entry first)."""
    distinct = []
    for f in found:
        if not any(_same(f[2], d[2]) for d in distinct):
            distinct.append(f)
    newest = max(distinct, key=lambda f: f[1])
    if len(distinct) == 1:
        return newest[2][0], newest[1], None
    if os.path.basename(rel) == "benchmarks.json" and all(isinstance(d[2][1], dict) for d in distinct):
        union: Dict[str, Any] = {}
        changed = widened = 0
        for f in sorted(distinct, key=lambda f: f[1]):  # oldest first: the newest file's entry wins
            for key, value in f[2][1].items():
                wider = _wider(union[key], value) if key in union and union[key] != value else None
                if wider is not None:  # a CPU machine's params are a GPU machine's less its GPU strategies
                    widened += 1
                    union[key] = wider
                    continue
                changed += key in union and union[key] != value
                union[key] = value
        note = (f"{rel}: the union of {len(distinct)} different copies ({len(union)} entries"
                + (f"; {widened} kept with the more params of the same version" if widened else "")
                + (f"; {changed} differed: kept {newest[0]}'s, the newest)" if changed else ")"))
        return json.dumps(union, indent=4, sort_keys=True) + "\n", newest[1], note
    return newest[2][0], newest[1], f"{rel}: {len(distinct)} different copies: kept {newest[0]}'s (the newest)"


def _wider(a: Any, b: Any) -> Any:
    """Of two benchmarks.json entries of one benchmark that differ only in their params (the same version, each
    axis of one holding the other's values): the one with more, so that no machine's rows leave the dashboard (the
    asv suite has no GPU strategies' rows on a CPU machine: benchmarks/_common.py). None otherwise."""
    if not (isinstance(a, dict) and isinstance(b, dict)) or a.get("version") != b.get("version"):
        return None
    if {k: v for k, v in a.items() if k != "params"} != {k: v for k, v in b.items() if k != "params"}:
        return None
    pa, pb = a.get("params"), b.get("params")
    if not (isinstance(pa, list) and isinstance(pb, list) and len(pa) == len(pb)
            and all(isinstance(x, list) for x in pa + pb)):
        return None
    if all(set(x) <= set(y) for x, y in zip(pa, pb)):
        return b
    if all(set(y) <= set(x) for x, y in zip(pa, pb)):
        return a
    return None


def merge(sources: List[str], dest: str) -> Tuple[int, int, List[str]]:
    """Merge `sources` into `dest` (checked in full first: a conflict writes nothing); (written, unchanged, notes)."""
    if not sources:
        raise UsageError("What to merge? Give one or more SRC folders, then DEST.")
    for src in sources:
        if not os.path.isdir(src):
            raise UsageError(f"Cannot merge {src}: no such folder.")
    writes, notes = plan(sources, dest)
    target = asv_folder(dest, dest=True)
    given = {rel for folder in [asv_folder(s) for s in sources] for rel in _files(folder)}
    if writes:
        _write_all(target, writes, dest)
    return len(writes), len(given - set(writes)), notes


STAGING = ".kerasbench-merge-"  # the hidden folder in DEST a merge writes into before renaming: pid, then random


def _place(target: str, rel: str) -> str:
    """Where `rel` is written in `target`: a link there is written through only where it stays inside DEST."""
    path = os.path.join(target, rel)
    real = os.path.realpath(path)
    if not inside(real, target):
        raise UsageError(f"Cannot merge into {path}: it links outside the destination {target} (to {real}); "
                         "nothing written.")
    return real


def _write_all(target: str, writes: Dict[str, Write], dest: str) -> None:
    """Write every file of `writes` into `target`, all or none: each into a hidden staging folder in `target` first
    (the one step that needs space), then the folders made and each file renamed into place, a replaced file kept
    (a hard link) until all are in. On any OSError what was made is removed and what was replaced put back: a
    one-line UsageError, `target` as it was."""
    made_target = not os.path.isdir(target)
    made: List[str] = []  # folders made, outermost first
    moved: List[Tuple[str, Optional[str]]] = []  # (final path, its previous version kept in staging, or None)
    staging = None
    try:
        if made_target:
            _make_dirs(target, made)
        clean_stale_folders(target, STAGING)  # what merges killed before their end left
        places = {rel: _place(target, rel) for rel in writes}
        staging = tempfile.mkdtemp(prefix=f"{STAGING}{os.getpid()}-", dir=target)
        staged = {}
        for i, (rel, (text, mtime)) in enumerate(sorted(writes.items())):
            path = os.path.join(staging, str(i))
            try:
                mode = os.stat(places[rel]).st_mode & 0o7777
            except FileNotFoundError:
                mode = 0o666 & ~_umask()
            with open(path, "w") as f:  # a full disk fails here (write or close), before any rename
                f.write(text)
            os.chmod(path, mode)
            os.utime(path, (mtime, mtime))  # its age travels with it: the newest machine.json, the newest run
            staged[rel] = path
        for rel in sorted(writes):
            _make_dirs(os.path.dirname(places[rel]), made)
        for rel in sorted(writes):
            place, old = places[rel], None
            if os.path.lexists(place):
                old = staged[rel] + ".old"
                os.link(place, old)
            os.replace(staged[rel], place)
            moved.append((place, old))
    except (OSError, UsageError) as e:
        for place, old in reversed(moved):
            try:
                os.rename(old, place) if old else os.unlink(place)  # rename: replaces on POSIX, as os.replace
            except OSError:
                pass
        if staging:
            shutil.rmtree(staging, ignore_errors=True)
        for folder in reversed(made):
            try:
                os.rmdir(folder)
            except OSError:
                pass
        if isinstance(e, UsageError):
            raise
        raise UsageError(f"Cannot merge into {dest}: {e.strerror or e}; nothing written, the destination left as "
                         "it was.") from None
    shutil.rmtree(staging, ignore_errors=True)


def _make_dirs(folder: str, made: List[str]) -> None:
    """os.makedirs, noting each folder it makes (in `made`, outermost first) so that a failed merge removes them."""
    missing = []
    while folder and not os.path.isdir(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    for path in reversed(missing):
        os.mkdir(path)
        made.append(path)
