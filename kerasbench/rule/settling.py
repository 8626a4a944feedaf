"""TensorFlow's own heap settling: a floor per count, calibrated on the reference's TF loops that do not leak.

The TF-free controls calibrate what the allocator can resolve (docs/calibration/: the heap to 0.5 KiB/iteration
from 12 iterations on glibc). A TensorFlow loop that does not leak keeps settling far longer: on the long
reference runs (docs/reference/) the heap of such loops grows +3.5 KiB/iteration over their first 8 measured
iterations, about +1 over 41 and +0.2 over 500, then nothing. No test on a short window tells that from a leak of
the same rate, so the heap of a process running TensorFlow is judged at the larger of the two floors: a run of n
iterations says `flat` or `grows` relative to what TF's own settling can produce over n (docs/protocol.md).

The floor at a count is the smallest power of two (bytes/iteration) above the top of every negative's confidence
interval at that count (a negative: one repeat's heap series of a TF pair, at least MIN_LENGTH long, that its
whole long run judges `flat` at the control's floors; judged over its first n iterations as a short run would
judge it, n at most half its length), at least as large as the floor of any longer count. `kerasbench calibrate
--settling REFERENCE…` makes the file; this module derives (pure) and reads it.
"""

from __future__ import annotations

import functools
import math
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Tuple

from .. import stats
from ..errors import UsageError
from ..files import CONFIG_LIMIT, ReadError, read_json
from ..units import max_growth_bytes, size_text
from .counts import alpha_for, floor_between, look_points, planned_looks
from .series import Floor, judge
from ..protocol import PROTOCOL_VERSION, version_of

if TYPE_CHECKING:  # the type only
    from .run import RunLike

NAME = "tf-settling.json"
SCHEMA = 1
SERIES = "heap"
MIN_LENGTH = 200  # a negative's long run, in iterations: its first half is the longest prefix judged
MIN_NEGATIVES = 5  # a count judged on fewer negatives gets no floor of its own (the next shorter count's applies)
# Prefixes are judged at the level of the longest plan a profile makes (the most looks: the widest intervals).
PLAN = (8, 20000)


def applies(spec: RunLike) -> bool:
    """Whether the measured process of `spec` runs TensorFlow (its heap settles as TF's does): a TF loop shape, in
    process (process_isolation's parent never imports TF). RunSpec.settles."""
    return bool(getattr(spec, "settles", False))


def negative(record: dict, values: List[float], control_at: Floor, candidate: Callable[[dict], bool]) -> bool:
    """Whether one repeat's `values` is a negative: a `candidate` record (spec.settling_candidate: a TF pair in
    process, with inputs that repeat every iteration) on CPU, whose whole long run is `flat` at the control's
    floors."""
    if not candidate(record) or len(values) < MIN_LENGTH:
        return False
    if (record.get("spec") or {}).get("device", "cpu") != "cpu":
        return False
    return judge(values, control_at, alpha=stats.ALPHA, resolve=True).verdict == "flat"


def derive(records: Iterable[dict], control_for: Callable[[dict], Floor], candidate: Callable[[dict], bool],
           sources: Iterable[str] = ()) -> Dict[str, Any]:
    """The settling calibration of the reference `records` (ok ones; every repeat's heap series of a `candidate`
    record may be a negative: spec.settling_candidate), each judged against its control floors `control_for(record)`
    (the allocator's heap floor by count)."""
    level = alpha_for(planned_looks(PLAN[0], PLAN[1], True))
    counts = look_points(*PLAN)
    tops: Dict[int, List[Tuple[float, str]]] = {n: [] for n in counts}
    used, made_on, measured_by = [], set(), set()
    for record in records:
        if record.get("status") != "ok":
            continue
        for repeat in record.get("repeats") or ():
            values = ((repeat.get("result") or {}).get("series") or {}).get(SERIES)
            control_at = control_for(record)
            if not values or any(v is None for v in values) or not negative(record, values, control_at, candidate):
                continue
            environment = record.get("environment") or {}
            made_on.add((environment.get("tensorflow"), environment.get("keras")))
            measured_by.add(version_of(record.get("summary")))
            name = f"{environment.get('tensorflow')} {record['loop']} × {record['strategy']}"
            used.append(f"{name} r{repeat.get('repeat')}")
            for n in counts:
                if n > len(values) // 2:
                    break
                fit = judge(values[:n], control_at, alpha=level, resolve=True).fit
                if math.isfinite(fit.high):
                    tops[n].append((fit.high, name))
    rows, floors, ceiling = {}, {}, 0.0
    for n in reversed(counts):  # the longest first: a shorter count's floor is at least a longer one's
        if len(tops[n]) < MIN_NEGATIVES:
            continue
        top, name = max(tops[n])
        ceiling = max(ceiling, 2.0 ** math.ceil(math.log2(max(top, 1.0))))
        floors[str(n)] = ceiling
        rows[str(n)] = {"negatives": len(tops[n]), "largest_ci_top": top, "from": name, "floor": ceiling}
    # "protocol": the one the negatives were measured by (None: records of protocol 7 or older, unstamped), what a
    # record's floors_from says; "derived_by": the rule that judged them here
    measured = sorted(measured_by, key=lambda v: -1 if v is None else v)
    return {"schema": SCHEMA, "protocol": measured[0] if len(measured) == 1 else (measured or None),
            "derived_by": PROTOCOL_VERSION, "series": SERIES, "level": level,
            "sources": sorted(sources),
            "made_on": [{"tensorflow": tf, "keras": keras} for tf, keras in sorted(made_on, key=str)],
            "negatives": sorted(used), "counts": dict(sorted(rows.items(), key=lambda kv: int(kv[0]))),
            "floors": dict(sorted(floors.items(), key=lambda kv: int(kv[0])))}


def paths() -> List[str]:
    """Where the settling calibration is looked for: the user's calibration folder, then the shipped one."""
    from ..calibration_store import folders

    return [os.path.join(folder, NAME) for folder in folders()]


@functools.lru_cache(maxsize=None)
def _read(path: str) -> Optional[Dict[str, Any]]:
    try:
        data = read_json(path, "settling calibration", CONFIG_LIMIT, missing=None)
        if data is None:
            return None
        floors = {int(n): float(v) for n, v in data["floors"].items()}
    except ReadError as e:
        raise UsageError(f"Bad settling calibration {path}: {e.problem}. Delete it or run "
                         "`kerasbench calibrate --settling docs/reference/protocol8/*.json`.") from None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise UsageError(f"Bad settling calibration {path}: {e}. Delete it or run "
                         "`kerasbench calibrate --settling docs/reference/protocol8/*.json`.") from None
    top = max_growth_bytes()  # a floor above the machine's memory is no floor: every leak would read flat under it
    if data.get("schema") != SCHEMA or not floors or not all(math.isfinite(v) and 0 <= v <= top
                                                             for v in floors.values()):
        raise UsageError(f"Bad settling calibration {path}: expected schema {SCHEMA} with finite floors from 0 to "
                         f"{size_text(top)} (this machine's memory). "
                         "Delete it or run `kerasbench calibrate --settling docs/reference/protocol8/*.json`.")
    made_on = [(e.get("tensorflow"), e.get("keras")) for e in data.get("made_on") or () if isinstance(e, dict)]
    return {"floors": floors, "negatives": len(data.get("negatives") or ()), "made_on": made_on,
            "protocol": data.get("protocol"), "path": path}


FOREIGN_FACTOR = 2.0  # a settling floor made on another TF/Keras judges at twice its value (docs/protocol.md)


def _found() -> Optional[Dict[str, Any]]:
    """The settling calibration in force (the first of paths() that exists), None when there is none."""
    for path in paths():
        data = _read(path)
        if data is not None:
            return data
    return None


def foreign(data: Dict[str, Any], versions: Optional[Dict[str, Any]]) -> bool:
    """Whether the measured TF/Keras (`versions`; None: not known) is none the calibration's negatives ran on."""
    if not versions:
        return True
    if (versions.get("keras_backend") or "tensorflow") != "tensorflow":  # Keras on jax or torch: not TF's heap
        return True
    return (versions.get("tensorflow"), versions.get("keras")) not in data["made_on"]


def _made_on(data: Dict[str, Any]) -> str:
    return ", ".join(f"TF {tf} / Keras {keras}" for tf, keras in data["made_on"]) or "an unstamped environment"


def stamp(versions: Optional[Dict[str, Any]] = None) -> Optional[Dict[str, Any]]:
    """Where TF's settling floor comes from, as data (a record's floors_from): the file, what it was made on, the
    protocol it was made under, and whether the measured environment is another."""
    data = _found()
    if data is None:
        return None
    return {"kind": "settling", "file": os.path.basename(data["path"]), "protocol": data["protocol"],
            "made_on": [{"tensorflow": tf, "keras": keras} for tf, keras in data["made_on"]],
            "foreign": foreign(data, versions)}


def floor(n: int, versions: Optional[Dict[str, Any]] = None) -> Optional[Tuple[float, str]]:
    """(floor, where it came from) of TF's heap settling over a window of `n` iterations in an environment of
    `versions` (TF and Keras; None: not known); None when no calibration is found or none of its counts is <= n.
    Made on another TF/Keras (or on an unknown one), the floor is FOREIGN_FACTOR times its value, and says so."""
    data = _found()
    found = None if data is None else floor_between(list(data["floors"].items()), n)
    if found is None:
        return None
    value, c, upper = found
    over = (f"{n} iterations, beyond its last count {c} (as the square root of the count)"
            if upper is None and n > c else f"{c} iterations" if upper is None or value == data["floors"][c]
            else f"{n} iterations, between its {c} and {upper}")
    source = (f"TF's own heap settling over {over} ({data['path']}: {data['negatives']} negative series of the "
              f"reference runs on {_made_on(data)}")
    if foreign(data, versions):
        on = versions.get("keras_backend") if versions else None
        measured = (f"Keras {versions.get('keras')} on {on}" if on and on != "tensorflow" else
                    f"TF {versions.get('tensorflow')} / Keras {versions.get('keras')}" if versions
                    else "an unknown TF/Keras")
        return value * FOREIGN_FACTOR, source + f"; measured on {measured}, another: ×{FOREIGN_FACTOR:g})"
    return value, source + ")"
