"""Trace and model counters of the measured process: bumped from traced Python bodies and model builds
(kerasbench._compat) or from isolated children's reports (kerasbench.worker), read by the trace probe.

Its own module so that _compat, which bumps them, and probes, which read them, need not import each other.
"""

import collections

_COUNTS = collections.Counter()


def count_trace(kind: str, n: int = 1) -> None:
    """Count `n` traces of `kind` ("train_step", "predict_step" or "function")."""
    _COUNTS["traces:" + kind] += n


def count_model(n: int = 1) -> None:
    """Count `n` models built and compiled."""
    _COUNTS["models"] += n


def traces(kind: str) -> int:
    """Traces of `kind` counted so far in this process."""
    return _COUNTS["traces:" + kind]


def models_built() -> int:
    """Models built and compiled so far in this process."""
    return _COUNTS["models"]
