"""Reading traces back: whether a record was traced (its memory figures taken under `run --trace`), and its trace."""

from __future__ import annotations

from typing import Any, Dict, Optional


Trace = Dict[str, Any]  # kerasbench.record.Trace


def traced(record: Dict[str, Any]) -> bool:
    """Whether a record's memory figures were taken under a trace (`run --trace`)."""
    return bool((record.get("spec") or {}).get("trace"))


def record_trace(record: Dict[str, Any]) -> Optional[Trace]:
    """The trace of a record's first ok repeat, if it was traced."""
    for rep in record.get("repeats", []):
        trace = (rep.get("result") or {}).get("trace")
        if trace:
            return trace
    return None
