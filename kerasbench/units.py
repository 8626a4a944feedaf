"""Sizes and numbers: the byte units every module uses, the one checker of a number or size a user typed
(command line, environment variable or RunSpec field alike), and showing one ("n/a" for none)."""

import math
from typing import Any, Optional

from .errors import UsageError

KIB, MIB, GIB = 1024, 1024**2, 1024**3
_UNITS = {"": 1, "B": 1, "K": KIB, "KB": KIB, "KIB": KIB, "M": MIB, "MB": MIB, "MIB": MIB,
          "G": GIB, "GB": GIB, "GIB": GIB}
# The bounds of a run's numbers (RunSpec.validate and the CLI's types check against the same ones).
MIN_MEMORY_CAP = 64 * MIB  # below this a worker cannot even import numpy: every pair would be "stopped"
MIN_TIME_LIMIT = 1.0  # seconds per worker
MAX_LEAK_BYTES = GIB  # per iteration of control_leak_*: more would only measure the memory cap
# The largest number any check takes: times a unit (up to TiB) it stays finite. A larger one (--floor-kib 1e308) would
# pass as finite and become infinity in bytes, refused later as "Received: inf", not as what was typed.
MAX_NUMBER = 1e290


def _invalid(name: str, value: Any, expected: str, kind: str = "value") -> UsageError:
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    error = UsageError(f"Invalid {kind} for {name}. Received: {shown}. Expected {expected}.")
    error.short = f"Invalid {kind}. Received: {shown}. Expected {expected}."  # argparse names the option itself
    return error


def check_number(value: Any, name: str, minimum: float = 0.0, maximum: float = math.inf) -> float:
    """`value` (a number or its text) as a finite float in [minimum, maximum] (and at most MAX_NUMBER); else a
    UsageError naming `name`, the value given and the range allowed."""
    if isinstance(value, bool):
        number = math.nan
    else:
        try:
            number = float(str(value).strip()) if isinstance(value, str) else float(value)
        except (TypeError, ValueError, OverflowError):
            number = math.nan
    top = min(maximum, MAX_NUMBER)
    said = maximum < math.inf or (math.isfinite(number) and number > top)  # the default bound, only when it matters
    expected = f"a finite number >= {minimum:.15g}" + (f" and <= {top:.15g}" if said else "")
    if not math.isfinite(number) or number < minimum or number > top:
        raise _invalid(name, value, expected)
    return number


def parse_bytes(text: Any, name: str = "the size", minimum: int = 1) -> int:
    """'4GiB', '512MiB', '1.5G' or a plain number of bytes -> int bytes >= minimum; UsageError otherwise."""
    s = str(text).strip().upper().replace(" ", "")
    number = s.rstrip("KMGIB")
    unit = s[len(number):]
    expected = "a size with an optional unit, e.g. 4GiB, 512MiB" + \
        (f", of at least {size_text(minimum)}" if minimum > 1 else "")
    if unit not in _UNITS or isinstance(text, bool):
        raise _invalid(name, text, expected, "size")
    try:
        value = float(number) * _UNITS[unit]
    except ValueError:
        raise _invalid(name, text, expected, "size") from None
    if not math.isfinite(value) or value < max(minimum, 1):
        raise _invalid(name, text, expected, "size")
    return int(value)


def size_text(n: Optional[float]) -> str:
    """Bytes in the largest whole unit, e.g. '64 MiB'; 'n/a' for None."""
    if n is None:
        return "n/a"
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n:g} B"


def kib_text(v: Any, grouping: str = "") -> str:
    """Bytes as signed KiB with one decimal, e.g. '+64.0' (grouping ',': '+1,234.5'); 'n/a' for None or NaN."""
    return "n/a" if v is None or (isinstance(v, float) and v != v) else f"{v / KIB:+{grouping}.1f}"


def mib_text(v: Any, grouping: str = "") -> str:
    """Bytes as MiB with one decimal (grouping ',': '1,234.5'); 'n/a' for None."""
    return "n/a" if v is None else f"{v / MIB:{grouping}.1f}"


def number_text(v: Any, fmt: str = "{:.0f}") -> str:
    """A number through `fmt`; 'n/a' for None."""
    return "n/a" if v is None else fmt.format(v)
