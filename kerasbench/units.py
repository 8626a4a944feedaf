"""Sizes and numbers: the byte units every module uses, the one checker of a number or size a user typed
(command line, environment variable or RunSpec field alike), and showing one ("n/a" for none)."""

import math
import re
from typing import Any, Optional

from .errors import UsageError
from .sizes import GIB as GIB, KIB as KIB, MIB as MIB, TIB as TIB  # the units' own names too

# The one unit grammar of a size (case aside): B; KiB, MiB, GiB, TiB, powers of 1024 (IEC); kB, MB, GB, TB, powers of
# 1000 (SI), as the IEC and SI define them. A bare K, M, G or T is refused, not guessed: '16k' read as 16 KiB before,
# '16KB' too (16,384 bytes where SI's is 16,000). No unit: bytes (a growth per iteration: KiB, said where it applies).
_UNITS = {"": 1, "B": 1, "KIB": KIB, "MIB": MIB, "GIB": GIB, "TIB": TIB,
          "KB": 1000, "MB": 1000**2, "GB": 1000**3, "TB": 1000**4}
_AMBIGUOUS = {"K": "K", "M": "M", "G": "G", "T": "T", "KI": "K", "MI": "M", "GI": "G", "TI": "T"}
UNITS_TEXT = "B, KiB, MiB, GiB, TiB (powers of 1024) or kB, MB, GB, TB (powers of 1000)"
# The bounds of a run's numbers (RunSpec.validate and the CLI's types check against the same ones).
MIN_MEMORY_CAP = 64 * MIB  # below this a worker cannot even import numpy: every pair would be "stopped"
MIN_TIME_LIMIT = 1.0  # seconds per worker
MAX_LEAK_BYTES = GIB  # per iteration of control_leak_*: more would only measure the memory cap
# The largest number any check takes: times a unit (up to TiB) it stays finite. A larger one (--floor-kib 1e308) would
# pass as finite and become infinity in bytes, refused later as "Received: inf", not as what was typed.
MAX_NUMBER = 1e290
# The largest growth per iteration a floor or a tolerated growth may be, wherever it comes from (an option, the
# marker, the API, a calibration file, a record): more than any machine holds (a growth of 1e280 bytes per iteration
# is no floor: every leak would read flat under it). On this machine the bound is its memory (max_growth_bytes).
MAX_GROWTH = TIB


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


def parse_bytes(text: Any, name: str = "the size", minimum: int = 1, maximum: Optional[float] = None,
                default_unit: int = 1) -> int:
    """'4GiB', '512MiB', '4GB' (4e9) or a plain number of `default_unit`s (bytes) -> int bytes in [minimum, maximum];
    UsageError otherwise, naming the unit grammar (UNITS_TEXT). A bare K, M or G is refused as ambiguous."""
    s = str(text).strip().upper().replace(" ", "")
    number = s.rstrip("KMGTIB")
    unit = s[len(number):]
    bound = ([f"at least {size_text(minimum)}"] if minimum > 1 else []) + \
        ([f"at most {size_text(maximum)}"] if maximum is not None else [])
    expected = f"a size with a unit of {UNITS_TEXT}, e.g. 4GiB" + (f", {' and '.join(bound)}" if bound else "")
    if unit in _AMBIGUOUS and not isinstance(text, bool):
        letter = _AMBIGUOUS[unit]
        raise _invalid(name, text, f"a unit that says its base: {letter}iB ({_UNITS[letter + 'IB']:,} bytes) "
                       f"or {letter if letter != 'K' else 'k'}B ({_UNITS[letter + 'B']:,} bytes); {letter} alone is "
                       "ambiguous", "size")
    if unit not in _UNITS or isinstance(text, bool) or not number.strip(".+-eE0123456789") == "":
        raise _invalid(name, text, expected, "size")
    try:
        value = float(number) * (_UNITS[unit] if unit else default_unit)
    except (ValueError, OverflowError):
        raise _invalid(name, text, expected, "size") from None
    if not math.isfinite(value) or value < minimum or (maximum is not None and value > maximum) or value < 0:
        raise _invalid(name, text, expected, "size")
    return int(value) + 0  # -0.0 is 0


def max_growth_bytes() -> float:
    """The largest growth per iteration a floor may be on this machine: its memory (no iteration can keep more),
    never above MAX_GROWTH; MAX_GROWTH where the memory cannot be read."""
    try:
        import psutil

        total = float(psutil.virtual_memory().total)
    except Exception:  # noqa: BLE001 -- no psutil, no /proc: the fixed bound alone
        return float(MAX_GROWTH)
    return min(float(MAX_GROWTH), total) if total > 0 else float(MAX_GROWTH)


def check_growth(value: Any, name: str, unit: int = 1, maximum: Optional[float] = None) -> float:
    """A floor or a tolerated growth per iteration (`value` in `unit`s: 1 bytes, KIB KiB) as bytes: a finite number
    from 0 to `maximum` bytes (default max_growth_bytes(): this machine's memory). Else a UsageError naming `name`,
    the value and why: NaN, infinity and negative values are no growth, and one above the machine's memory no floor
    (every leak would read flat under it). -0.0 is 0."""
    top = max_growth_bytes() if maximum is None else maximum
    said = "KiB" if unit == KIB else "bytes" if unit == 1 else f"units of {unit} bytes"
    where = "this machine's memory" if maximum is None else "the largest growth per iteration any machine holds"
    number = check_number(value, name)  # NaN, infinity, negative, above MAX_NUMBER: refused as typed
    if number * unit > top:
        raise _invalid(name, value, f"a growth per iteration from 0 to {top / unit:.6g} {said} ({size_text(top)}, "
                       f"{where}): more is no floor, every leak would read flat under it")
    return number * unit + 0.0


def size_text(n: Optional[float]) -> str:
    """Bytes in the largest whole unit, e.g. '64 MiB'; 'n/a' for None."""
    if n is None:
        return "n/a"
    for unit, size in (("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n:g} B"


def kib_text(v: Any, grouping: str = "") -> str:
    """Bytes as signed KiB with one decimal, e.g. '+64.0' (grouping ',': '+1,234.5'); 'n/a' for None or NaN."""
    return "n/a" if v is None or (isinstance(v, float) and v != v) else f"{v / KIB:+{grouping}.1f}"


def floor_kib(v: Any) -> str:
    """A floor (bytes per iteration) in KiB, to a tenth and as few digits as it needs, e.g. '64', '54.7' (0 for
    none): a calibrated floor is a measured figure, not six significant digits of one."""
    return f"{round((v or 0) / KIB, 1):g}"


def mib_text(v: Any, grouping: str = "") -> str:
    """Bytes as MiB with one decimal (grouping ',': '1,234.5'); 'n/a' for None."""
    return "n/a" if v is None else f"{v / MIB:{grouping}.1f}"


def number_text(v: Any, fmt: str = "{:.0f}") -> str:
    """A number through `fmt`; 'n/a' for None."""
    return "n/a" if v is None else fmt.format(v)


# ---------------------------------------------------------------- a limit as pytest-memray writes it
# pytest-memray's `limit_leaks("16 KB")` and `limit_memory` read a size with pytest_memray.utils.parse_memory_string:
# a number, optional spaces, then B, KB, MB, GB, TB or PB in any case, each KB a power of 1024 ("16 KB" is 16,384
# bytes, "1 MB" 1,048,576). The marker, --kerasbench-max-growth, the kerasbench_measure fixture and
# assert_no_growth(floor_kib="16 KB") read a limit the same way, so that one copied across means what it meant there;
# KiB, MiB, GiB, TiB, PiB (IEC) are the same powers of 1024. Refused, with the reason, where a spelling would be read
# two ways: a lowercase k ("16 kB", "16 kb": SI's 16,000 bytes, and what kerasbench read "16 kB" as before
# 2026-12-08) and a bare K, M, G, T ("16k"). A limit without a unit is a number of KiB (the marker's floor_kib).
PB, PIB = 1024**5, 1024**5
_LIMIT_UNITS = {"B": 1, "KB": KIB, "MB": MIB, "GB": GIB, "TB": TIB, "PB": PB,
                "KIB": KIB, "MIB": MIB, "GIB": GIB, "TIB": TIB, "PIB": PIB}
LIMIT_UNITS_TEXT = "B, KB, MB, GB, TB, PB (powers of 1024, as pytest-memray reads them) or KiB, MiB, GiB, TiB, PiB"
_LIMIT = re.compile(r"\s*(?P<number>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(?P<unit>[A-Za-z]*)\s*")


def parse_limit(text: str, name: str, maximum: float) -> float:
    """A limit as pytest-memray writes it ('16 KB', '1 MB', '512B', '16 KiB') -> bytes (KB, MB, ... powers of 1024,
    as pytest_memray.utils.parse_memory_string reads them), from 0 to `maximum`. UsageError naming the value and
    why otherwise: a unit read two ways ('16 kB', '16k') is refused with both readings, not guessed."""
    match = _LIMIT.fullmatch(text)
    unit = match.group("unit") if match else ""
    si_kilo = unit in ("kB", "kb")  # SI's kilo is a lowercase k: 1,000 there, 1,024 in pytest-memray
    if match and (si_kilo or unit.upper() in ("K", "M", "G", "T", "P")):
        number, letter = match.group("number"), unit[:1].upper()
        what = (f"'{unit}' is read two ways: SI's {number} × 1,000 bytes, pytest-memray's {number} × 1,024"
                if si_kilo else f"{unit} alone is ambiguous")
        raise _invalid(name, text, f"a unit that says its base: {what}; write {number} KiB or {number} {letter}B "
                       f"(× {_LIMIT_UNITS[letter + 'B']:,} bytes, as pytest-memray reads {letter}B) or the bytes "
                       "with B", "size")
    if not match or unit.upper() not in _LIMIT_UNITS:
        raise _invalid(name, text, f"a size with a unit of {LIMIT_UNITS_TEXT}, e.g. '16 KB'", "size")
    try:
        value = float(match.group("number")) * _LIMIT_UNITS[unit.upper()]
    except OverflowError:
        value = math.inf
    if not math.isfinite(value) or value < 0 or value > maximum:
        raise _invalid(name, text, f"a size from 0 to {size_text(maximum)}", "size")
    return value + 0.0


def limit_kib(value: Any, name: str = "max_growth") -> float:
    """A growth per iteration as KiB (what floor_kib takes): a limit as pytest-memray writes it (units.parse_limit:
    "16 KB" is 16,384 bytes and "1 MB" 1,048,576, as in its limit_leaks; KiB, MiB the same; "16 kB" and a bare K
    refused as read two ways), or a number meaning KiB (as --floor-kib does), from 0 to this machine's memory
    (units.check_growth: 0, -0.0, '0' and '0 KiB' alike are a floor of 0). UsageError otherwise, naming the value
    and why; a size without a unit is not bytes here, unlike --memory-cap."""
    top = max_growth_bytes()
    try:
        if isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                return parse_limit(value, name, top) / KIB
            return check_growth(number, name, KIB) / KIB
        return check_growth(value, name, KIB) / KIB
    except UsageError as e:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        if "says its base" in str(e):  # '16k', '16 kB': read two ways, said, not guessed
            raise UsageError(f"Invalid {name}. Received: {shown}. Expected a growth per iteration with "
                             f"{str(e).split(' Expected ', 1)[1]}") from None
        raise UsageError(f"Invalid {name}. Received: {shown}. Expected a growth per iteration from 0 to "
                         f"{size_text(top)} (this machine's memory; more is no floor, every leak would read flat "
                         f"under it): a size such as '16 KB' (16,384 bytes), '1 MiB' or '512 B' ({LIMIT_UNITS_TEXT}), "
                         "or a number of KiB.") from None
