"""Stored calibrations and the floor a run is judged with.

`kerasbench calibrate` (kerasbench.calibration) measures which leak rates this machine and
allocator can detect and stores the result here, one JSON file per host and allocator; every
measurement then reads its floor (the smallest growth per iteration called a leak) from the file
that fits, else the default. This module only reads and writes those files: it runs nothing.
"""

import json
import os
import platform
from typing import Any, Optional, Tuple

from . import stats
from .errors import UsageError
from .files import check_readable, make_folder, write_json

ENV_VAR = "KERASBENCH_CALIBRATION"  # a folder of <host>-<allocator>.json files
SCHEMA = 1


def directory() -> str:
    """Where calibrations live: $KERASBENCH_CALIBRATION, else ~/.cache/kerasbench/calibration."""
    if os.environ.get(ENV_VAR):
        return os.environ[ENV_VAR]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "kerasbench", "calibration")


def path_for(allocator: str, host: Optional[str] = None) -> str:
    """The calibration file of `allocator` on `host` (this machine by default)."""
    return os.path.join(directory(), f"{host or platform.node() or 'machine'}-{allocator}.json")


def save(calibration: dict, path: str) -> str:
    """Write `calibration` to `path` atomically (its folder made if missing)."""
    make_folder(os.path.dirname(os.path.abspath(path)), "calibration")
    return write_json(path, calibration, "calibration")


def load(allocator: str, path: Optional[str] = None) -> Optional[dict]:
    """The stored calibration of `allocator` here, None if there is none; UsageError if the file is bad."""
    path = path or path_for(allocator)
    if os.path.lexists(path):
        check_readable(path, "calibration file {path}")  # a FIFO would hang every run
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        problem = str(e)
    else:
        problem = _problem(data, allocator)
        if not problem:
            return data
    raise UsageError(f"Bad calibration file {path}: {problem}. "
                     f"Delete it or run `kerasbench calibrate --allocator {allocator}`.")


def _problem(data: Any, allocator: str) -> Optional[str]:
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return f"expected a JSON object with schema {SCHEMA}"
    if data.get("allocator") != allocator:
        return f"it is for allocator {data.get('allocator')!r}, not {allocator!r}"
    floors = data.get("floors")
    if not isinstance(floors, dict) or not floors:
        return "no floors"
    for n, floor in floors.items():
        if not str(n).isdigit() or not (floor is None or (isinstance(floor, (int, float)) and floor >= 0)):
            return f"bad floor {n!r}: {floor!r}"
    return None


def floor_for(allocator: str, iterations: int, default: float = stats.DEFAULT_FLOOR) -> Tuple[float, str]:
    """(floor in bytes/iteration, where it came from) for a run of `iterations` on `allocator`.

    Uses the stored floor of the largest calibrated iteration count <= `iterations` (else the
    smallest count); the default when there is no calibration or it detected nothing at that count.
    """
    path = path_for(allocator)
    data = load(allocator, path)
    if data is None:
        return default, f"default (no calibration for {allocator} at {path})"
    counts = sorted(int(n) for n in data["floors"])
    n = max([c for c in counts if c <= iterations] or counts[:1])
    floor = data["floors"][str(n)]
    if floor is None:
        return default, f"default (calibration {path} detected no tested rate at {n} iterations)"
    return float(floor), f"calibration {path} ({n} iterations)"


