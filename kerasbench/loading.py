"""Reading records back (compare, report, score, merge): records files and folders of them, each record checked
against the record's schema, labelled with the TF release it ran (and its Keras package or Python where a run
measured several), from one schema version and one commit.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any, Dict, List, Sequence, Tuple

from .column import Column
from .errors import UsageError
from .files import DATA_LIMIT, check_readable, read_json, records_name
from .record import OTHER_BACKENDS, SCHEMA_VERSION, Record, backend_of, check_record
from .tree import place_of
from .units import MAX_GROWTH, size_text

_ENV_TF = re.compile(r"tensorflow(?:-cpu)?(\d+\.\d+(?:\.\d+)?)")
_KERAS_NIGHTLY = re.compile(r"\.dev\d{10}$")  # keras-nightly's version: the build hour (3.16.0.dev2026102704)
_TF_NIGHTLY = re.compile(r"-dev\d{8}$")  # a TF nightly's __version__ (2.22.0-dev20260905), which comes with one


def find_records_files(paths: Sequence[str]) -> List[Tuple[str, bool]]:
    """(path, named) for every path given and every records file under a folder given (files.records_name: the
    rule an output's check uses too); a FIFO, device or folder among them is refused here, before anything is read."""
    found = []
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found += [(check_readable(os.path.join(root, f)), False) for f in sorted(files) if records_name(f)]
        elif os.path.lexists(path):
            found.append((check_readable(path), True))  # a FIFO would hang the reader: refused, not opened
        else:
            raise UsageError(f"Cannot read records from {path}: no such file or folder.")
    return found


def read_records_file(path: str) -> Any:
    """The parsed JSON of `path` (files.read_json: a regular file of at most DATA_LIMIT, nested at most MAX_DEPTH);
    a one-line UsageError when it cannot be read or parsed."""
    return read_json(path, "records file", DATA_LIMIT)


# What the readers index without asking (compare's counts and noise, the metrics, score's replay): a record that
# lacks one is not a kerasbench record, said at load time rather than as a KeyError in the middle of a table.
_NEEDED = {"spec": ("iterations",), "result": ("series",), "series": ("rss",)}
_COUNTS = {"iterations": 1, "repeats": 1, "warmup": 0}  # spec counts: the least a measurement can have


def check_loadable(record: Record, path: str, index: int) -> Record:
    """`record` (already type-checked: record.check_record) if it holds what the readers index: its spec's counts
    (iterations and repeats at least 1, warmup at least 0), and a series (rss at least) in every result."""
    where = f"records[{index}]"

    def refuse(problem: str) -> UsageError:
        return UsageError(f"Not a kerasbench record in {path}: {problem}.")

    spec = record["spec"]
    for key in _NEEDED["spec"]:
        if key not in spec:
            raise refuse(f"{where}.spec has no '{key}'")
    for key, least in _COUNTS.items():
        if key in spec and spec[key] < least:
            raise refuse(f"{where}.spec.{key} is {spec[key]}, expected {least} or more")
    for part, key in (("spec", "floor"), ("summary", "floor"), ("summary", "heap_floor")):
        floor = (record.get(part) or {}).get(key)  # what a reader judges at again (score re-judges at a given floor)
        if floor is not None and not (math.isfinite(floor) and 0 <= floor <= MAX_GROWTH):
            raise refuse(f"{where}.{part}.{key} is {floor!r}, expected a growth per iteration from 0 to "
                         f"{MAX_GROWTH} bytes ({size_text(MAX_GROWTH)}): no floor is NaN, negative or larger")
    for i, repeat in enumerate(record["repeats"]):
        result = repeat.get("result")
        if result is None:
            continue  # a failed or skipped repeat measured nothing
        for key in _NEEDED["result"]:
            if key not in result:
                raise refuse(f"{where}.repeats[{i}].result has no '{key}'")
        for key in _NEEDED["series"]:
            if key not in result["series"]:
                raise refuse(f"{where}.repeats[{i}].result.series has no '{key}'")
    return record


def load_records(paths: Sequence[str]) -> List[Tuple[Record, str, str]]:
    """Every usable record under `paths` as [(record, path, tf_version)]: one schema, one commit.

    Records of several machines load together (a fan-out's merged tree): whether their figures may be
    compared is kerasbench.machine's fingerprint, which compare notes per cell.
    """
    out, schema, commit = [], None, None
    payloads = []
    for path, named in find_records_files(paths):
        payload = read_records_file(path)
        if not (isinstance(payload, dict) and isinstance(payload.get("records"), list)):
            if named:
                raise UsageError(f"Not a kerasbench records file: {path} (expected an object with a 'records' list).")
            continue  # e.g. asv's own JSON files in a .asv tree
        payloads.append((path, payload))
    in_run: Dict[str, set] = {}  # the TF versions of each run folder (one asv environment): the controls' too
    sides: Dict[str, Dict[str, set]] = {}  # each run's Keras package and Python: the controls' and skipped pairs' too
    for path, payload in payloads:
        if place_of(path)[1]:
            in_run.setdefault(os.path.dirname(os.path.abspath(path)), set()).update(
                (r.get("environment") or {}).get("tensorflow") for r in payload["records"] if isinstance(r, dict))
        side = sides.setdefault(_run_of(path), {"keras_package": set(), "python": set(), "backend": set()})
        for r in payload["records"]:
            env = (r.get("environment") or {}) if isinstance(r, dict) else {}
            side["keras_package"].add(env.get("keras_package"))
            side["backend"].add(env.get("keras_backend"))
            side["python"].add(_python_minor(env))
    for path, payload in payloads:
        _, file_commit, env_name = place_of(path)
        versions = {(r.get("environment") or {}).get("tensorflow")
                    for r in payload["records"] if isinstance(r, dict)} - {None}
        if not versions:  # e.g. the control loop, which never imports TF: its run folder's other loops say it
            versions = in_run.get(os.path.dirname(os.path.abspath(path)), set()) - {None}
        for index, record in enumerate(payload["records"]):
            check_loadable(check_record(record, path, index), path, index)
            found = record.get("schema", payload.get("schema"))
            if schema is None:
                schema = (found, path)
            elif found != schema[0]:
                raise UsageError(f"Mixed schema versions: {path} has schema {found}, "
                                 f"{schema[1]} has schema {schema[0]}.")
            if found != SCHEMA_VERSION:
                raise UsageError(f"Unsupported records schema {found} in {path}: "
                                 f"this kerasbench reads schema {SCHEMA_VERSION}.")
            env = dict(record.get("environment") or {})
            version = env.get("tensorflow")
            side = {key: values - {None, ""} for key, values in sides[_run_of(path)].items()}
            backend = backend_of(env)
            if not env.get("keras_backend") and len(side["backend"]) == 1:
                backend = next(iter(side["backend"]))  # the control loop, which imports no Keras: its run's backend
            if version is None and backend not in OTHER_BACKENDS and len(versions) == 1:
                version = next(iter(versions))  # e.g. the control loop, which never imports TF
            if version is None and env_name and _ENV_TF.search(env_name):
                version = _ENV_TF.search(env_name)[1]
            if backend in OTHER_BACKENDS:  # Keras on jax or torch: a side of its own, labelled by the backend
                version = str(Column(version or next(iter(versions), None) or f"keras-{env.get('keras')}", backend))
            if version is None:
                continue
            keras_package = env.get("keras_package") or (next(iter(side["keras_package"]))
                                                         if len(side["keras_package"]) == 1 else None)
            if backend in OTHER_BACKENDS:
                pass
            elif keras_package == "tf_keras":  # Keras 2 on a Keras 3 TF: another side than its Keras 3
                version = str(Column(version, "tf_keras"))
            elif _KERAS_NIGHTLY.search(str(env.get("keras") or "")) and not _TF_NIGHTLY.search(str(version)):
                # keras-nightly at a release: another side than its Keras
                version = str(Column(version, f"keras-{env['keras']}"))
            python = _python_minor(env) or (next(iter(side["python"])) if len(side["python"]) == 1 else "")
            if file_commit:
                if commit is None:
                    commit = (file_commit, path)
                elif file_commit != commit[0]:
                    raise UsageError(f"Records from different commits: {path} is from {file_commit}, "
                                     f"{commit[1]} from {commit[0]}.")
            out.append((record, path, str(version), python))
    if not out:
        raise UsageError(f"No records with a TensorFlow version found in {', '.join(paths)}.")
    return _label_pythons(out)


def _run_of(path: str) -> str:
    """What one run wrote: an asv environment's folder of a records tree (several files), else the file itself."""
    return os.path.dirname(os.path.abspath(path)) if place_of(path)[1] else os.path.abspath(path)


def _python_minor(env: dict) -> str:
    """'3.12' of an environment's interpreter ('' when not recorded: a pair skipped before its worker ran)."""
    return ".".join(str(env.get("python") or "").split(".")[:2])


def _label_pythons(loaded: List[Tuple[Record, str, str, str]]) -> List[Tuple[Record, str, str]]:
    """A release measured on several Pythons (the matrix's Python axis, `run --tf V --python X.Y`) is one side per
    Python, `<release>+py3.12`; a release on one Python keeps its plain name. (A record's Python is its run's
    when it has none of its own: a skipped pair.)"""
    minors: Dict[str, set] = {}
    for _, _, version, python in loaded:
        minors.setdefault(version, set()).add(python)
    return [(record, path, str(Column.on_python(version, python)) if len(minors[version]) > 1 and python else version)
            for record, path, version, python in loaded]
