"""The fields of a measurement's spec, declared once: spec.RunSpec is this dataclass with its checks, and the record's
spec (recordtypes.RecordSpec) is made from the same fields, their types, and which every record has had.

A module of its own, low in the import graph: the record's definitions read it without importing what RunSpec's
checks need (the loop and strategy registries, the TF layer).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from .allocators import DEFAULT


@dataclasses.dataclass(frozen=True)
class SpecFields:
    """RunSpec's fields and their defaults (kerasbench.spec.RunSpec: everything that decides a measurement)."""

    loop: str
    strategy: str
    iterations: int = 30  # measured iterations: exactly these, or the most of a budgeted run (min_iterations set)
    warmup: int = 3
    repeats: int = 1
    batch_size: int = 32
    leak_bytes: int = 0  # control_leak_* only; 0 = $KERASBENCH_LEAK_KIB KiB, else 256 KiB
    probes: bool = True
    memory_cap: int = 0  # bytes for the worker's process tree; 0 = shared_memory_cap(jobs)
    time_limit: float = 1800.0  # seconds per worker process
    floor: Optional[float] = None  # bytes/iteration: the smallest growth called a leak; None = calibrated or default
    floor_source: str = ""  # where a given floor came from; the record says where the one it was judged with came from
    profile: str = ""  # the profile the counts came from, when one did
    device: str = "cpu"  # "cpu" hides GPUs from TF; "gpu" needs one (else the pair is skipped)
    backend: str = ""  # Keras 3's backend (tensorflow, jax, torch): the runner sets KERAS_BACKEND; "" = the caller's
    #                    (records before it lack it: the environment's keras_backend says)
    allocator: str = DEFAULT  # a name from allocators.ALLOCATORS; the runner sets the worker's env
    repro: str = ""  # loop "repro" only: the user's Python file (kerasbench.repro)
    body: str = ""  # measure(body=): the function measured, "module:qualname" (compare pairs one body's records only)
    body_sha256: str = ""  # ... and the first 12 hex digits of its source's sha256 (kerasbench.api.identity)
    python: str = ""  # the worker's interpreter, e.g. an asv environment's (environment.python_for); "" = this one
    jobs: int = 1  # pairs measured at once: memory figures are per process, times per iteration under contention
    trace: int = 0  # top N sites of a trace of where memory grows (kerasbench.trace); 0 = off (traced figures move)
    trace_native: bool = False  # the trace's native sites too (memray; tens of times slower on TF loops)
    # A budgeted run (a profile's; docs/protocol.md): at least min_iterations and min_seconds, then until both
    # verdicts are decided (sequential: the runner answers the worker's looks), `budget` seconds of loop are spent,
    # `iterations` are done, or RSS grew by max_growth bytes. min_iterations 0: exactly `iterations`, no looks.
    min_iterations: int = 0
    budget: float = 0.0  # seconds of measured loop per worker; 0: none
    min_seconds: float = 0.0  # no look stops the loop before this many seconds of it
    sequential: bool = False
    max_growth: int = 0  # bytes of RSS over the baseline that end the loop; 0: none (the memory cap still applies)


# The fields every record's spec has had; records made before the others existed lack them (readers use .get).
FIRST_FIELDS = ("loop", "strategy", "iterations", "warmup", "repeats", "batch_size", "leak_bytes", "probes",
                "memory_cap", "time_limit", "floor")
