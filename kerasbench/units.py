"""Sizes: the byte units every module uses, parsing a size a user typed, and showing one ("n/a" for none)."""

from typing import Any

from .errors import UsageError

KIB, MIB, GIB = 1024, 1024**2, 1024**3
_UNITS = {"": 1, "B": 1, "K": KIB, "KB": KIB, "KIB": KIB, "M": MIB, "MB": MIB, "MIB": MIB,
          "G": GIB, "GB": GIB, "GIB": GIB}


def parse_bytes(text: str) -> int:
    """'4GiB', '512MiB', '1.5G' or a plain number of bytes -> int bytes; UsageError otherwise."""
    s = str(text).strip().upper().replace(" ", "")
    number = s.rstrip("KMGIB")
    unit = s[len(number):]
    try:
        value = float(number) * _UNITS[unit]
    except (ValueError, KeyError):
        raise UsageError(
            f"Invalid size. Received: {text!r}. Expected a number with an optional unit, e.g. 4GiB, 512MiB."
        ) from None
    if not value > 0 or value == float("inf"):
        raise UsageError(f"Invalid size. Received: {text!r}. Expected a positive size.")
    return int(value)


def kib_text(v: Any) -> str:
    """Bytes as signed KiB with one decimal, e.g. '+64.0'; 'n/a' for None or NaN."""
    return "n/a" if v is None or (isinstance(v, float) and v != v) else f"{v / KIB:+.1f}"


def mib_text(v: Any) -> str:
    """Bytes as MiB with one decimal; 'n/a' for None."""
    return "n/a" if v is None else f"{v / MIB:.1f}"


def number_text(v: Any, fmt: str = "{:.0f}") -> str:
    """A number through `fmt`; 'n/a' for None."""
    return "n/a" if v is None else fmt.format(v)
