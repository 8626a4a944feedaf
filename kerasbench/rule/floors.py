"""What a series is judged against at the count judged: its resolution (the "floor": the allocator's calibration
between its calibrated counts, TF's own heap settling for a TF process (kerasbench.rule.settling), else the
default), and where it came from, as text and as data (a record's floors_from). Its margin (what counts as growth:
a given one, else the series' default, whatever the count) is series.margin_for's, named here too. The calibrations
are stored and read by kerasbench.calibration_store; this module decides which applies.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

from .. import calibration_store as stored
from . import settling
from .counts import floor_between
from .series import DEFAULT_FLOOR as DEFAULT_FLOOR, DEFAULT_RESOLUTION, MARGINS  # noqa: F401 (the namespace)
from .series import (DEFAULT_MARGIN as DEFAULT_MARGIN, GIVEN_FLOOR as GIVEN_FLOOR,  # noqa: F401 (the namespace)
                     RSS_LEAST_MARGIN as RSS_LEAST_MARGIN, SERIES, FloorAt, margin_for as margin_for)

if TYPE_CHECKING:  # the type only
    from .run import RunLike

DEFAULT_SOURCE = "default ("  # how floor_for's text of the default floor begins


def default_resolution(series: str, n: int) -> float:
    """The resolution of `series` over n iterations where no calibration fits (DEFAULT_RESOLUTION's table, between
    and beyond its counts as floor_between reads a calibration's; under its first count, its first)."""
    table = DEFAULT_RESOLUTION.get(series, DEFAULT_RESOLUTION["rss"])
    found = floor_between(table, max(n, table[0][0]))
    return float(found[0])


def calibration_stamp(allocator: str, iterations: int, series: str = "rss", python: str = "") -> dict:
    """Which calibration floor_for takes the floor of `series` from at `iterations` (workers on `python`), as data (a
    record's floors_from): its file, key, when it was made and under which protocol; {"kind": "default"} when none
    fits."""
    path, data, n = stored.find(allocator, iterations, python)
    table = (data or {}).get("floors" if series == "rss" else f"{series}_floors") or {}
    if data is None or table.get(str(n)) is None:
        return {"kind": "default"}
    return {"kind": "calibration", "file": os.path.basename(path), "key": data.get("key"),
            "created": data.get("created"), "protocol": data.get("protocol"), "count": n}


def floor_for(allocator: str, iterations: int, default: Optional[float] = None,
              why: str = "", series: str = "rss", python: str = "", beyond: bool = True) -> Tuple[float, str]:
    """(floor in bytes/iteration, where it came from and why) for a run of `iterations` on `allocator`.

    Uses the best fitting calibration's floors around `iterations` (floor_between: from its largest count <=
    `iterations` falling geometrically to the next); the default when none
    fits (the text says what was looked for, where, and `why` none was made) or the calibration detected
    nothing at that count. `series` "heap" gives the floor of the heap reading (heap growth per iteration). `python`:
    the workers' Python (stored.python_version's; '' this process's). `default`: DEFAULT_RESOLUTION's of `series`
    at `iterations`. `beyond`: past the calibration's last count the floor falls (counts.floor_between); False: the
    last count's, as protocol 8 read it (the settling calibration's derivation).
    """
    if default is None:
        default = default_resolution(series, iterations)
    found = stored.ranked(allocator, iterations, python) or [(None, None, None)]
    path, data, n = found[0]
    if data is not None and series != "rss" and not data.get(f"{series}_floors"):
        return default, f"default (calibration {stored._where(path)} has no {series} floors)"
    if data is None:
        key = stored.environment_key(allocator, python)
        return default, (f"default (no calibration for {allocator} at <= {iterations} iterations fits "
                         f"{stored.describe(key)}; looked in {', '.join(stored._where(f) for f in stored.folders())}"
                         + (f"; {why}" if why else "") + ")")
    what = f"calibration {stored._where(path)}"
    fitted = (f"fits {stored.describe(data['key'])}" if data["schema"] >= 2
              else f"an old calibration of host {data.get('host')}")
    table = data["floors" if series == "rss" else f"{series}_floors"]
    if table.get(str(n)) is None:
        return default, f"default ({what}, {fitted}, detected no tested rate at {n} iterations)"
    floor, _, upper = floor_between([(int(c), v) for c, v in table.items()], iterations, beyond)
    if upper is None and iterations > n and beyond:
        counts = f"{iterations} iterations, beyond its last count {n} (as the square root of the count)"
    elif upper is None or floor == table[str(n)]:
        counts = f"{n} iterations"
    else:
        counts = f"{iterations} iterations, between its {n} and {upper}"
    behind = [(p, d) for p, d, count in found[1:] if count == n]  # what the user's folder outranks: said, not guessed
    ahead = (f"; ahead of {stored._where(behind[0][0])} ({behind[0][1].get('runs')} runs per control), the user's "
             "folder first: delete it to use that one") if behind else ""
    return float(floor), (f"{what} ({fitted}; made {data.get('created')}, {data.get('runs')} runs per control; "
                          f"{counts}{ahead})")


def floor_at(spec: RunLike, series: str = "rss", versions: Optional[Dict[str, Any]] = None) -> FloorAt:
    """(resolution, where it came from) of `series` ("rss" or "heap") for a window of n iterations, as a function of n.

    The allocator's calibration of that series at n (between two calibrated counts, floor_between), else the
    default resolution; the heap of a process running TensorFlow at no less than TF's own settling over n
    iterations (kerasbench.rule.settling), doubled where the measured TF/Keras (`versions`: the worker environment's
    "tensorflow" and "keras"; None: not known) is not one it was made on. A given floor (spec.floor) is the margin
    (margin_for), not the resolution: what a count resolves does not depend on what the user counts as growth.
    The function's `stamp(n)` says, as data, which file gave the resolution at n (what a record keeps: floors_from).
    """
    settles = series == settling.SERIES and settling.applies(spec)
    python = (versions or {}).get("python") or spec.python  # the workers' Python: their calibration, not ours

    @functools.lru_cache(maxsize=None)
    def chosen(n: int) -> Tuple[float, str, dict]:
        value, source = floor_for(spec.allocator, n, series=series, python=python,
                                  why="" if spec.floor is not None else getattr(spec, "floor_source", "") or "")
        if settles:
            tf = settling.floor(n, versions)
            if tf is not None and tf[0] > value:
                return tf[0], tf[1], settling.stamp(versions)
        return value, source, calibration_stamp(spec.allocator, n, series, python)

    def at(n: int) -> Tuple[float, str]:
        return chosen(n)[:2]

    at.stamp = lambda n: chosen(n)[2]
    return at


def spec_floors(spec: RunLike, environment: Optional[Dict[str, Any]] = None) -> Dict[str, FloorAt]:
    """The floors a spec's series are judged at, by series name (floor_at of each; a calibration is read lazily,
    once per count), for a worker whose environment (a record's) is `environment` when known. The runner resolves
    them; kerasbench.summary is given them."""
    keys = ("tensorflow", "keras", "keras_backend", "python")
    versions = None if environment is None else {k: environment.get(k) for k in keys}
    return {name: floor_at(spec, name, versions) for name in SERIES}


def fixed_floors(floors: Dict[str, float], source: str) -> Dict[str, FloorAt]:
    """Floors that do not depend on the count ({"rss": bytes, "heap": bytes}), each with where it came from."""
    made = {}
    for name, floor in floors.items():
        made[name] = (lambda n, floor=floor: (floor, source))
        made[name].stamp = lambda n: {"kind": "given", "source": source}
    return made


def stamp_kind(stamp: Any) -> Optional[str]:
    """The kind of floor a record's stamp (floors_from's rss or heap) names: calibration, settling, given, default;
    a default a run settled on before it was stamped so (kind given, its text the default's) is the default; None
    for no stamp."""
    if not isinstance(stamp, dict):
        return None
    kind = stamp.get("kind")
    return "default" if kind == "given" and str(stamp.get("source", "")).startswith(DEFAULT_SOURCE) else kind


def floor_stamp(at: FloorAt, n: int) -> Optional[dict]:
    """Which file gave the floor `at` gives at n, as data (floor_at's stamp); None for a floor function without."""
    stamp = getattr(at, "stamp", None)
    return stamp(n) if stamp else None
