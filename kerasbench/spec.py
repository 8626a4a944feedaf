"""The spec of a measurement: RunSpec, everything that decides one (loop shape, strategy, counts, limits, where the
worker runs), recorded with its result.

A RunSpec is immutable: `validate()` checks every field and returns the spec with its defaults resolved (the
memory cap, the control leak's size, the repro file's absolute path); a change after that is a new spec
(dataclasses.replace) validated again. The worker builds its spec from the JSON the runner hands it, checked
already, and imports this module alone of the parent's machinery.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Mapping, Optional

from . import _compat, allocators, calibration_store
from .errors import UsageError, unknown
from .loops import get_loop
from .specfields import SpecFields
from .strategies import get_strategy
from .units import KIB, MAX_LEAK_BYTES, MIN_MEMORY_CAP, MIN_TIME_LIMIT, check_growth, check_number, parse_bytes

DEVICES = ("cpu", "gpu")
MAX_COUNT = 10**9  # the most iterations, warm-up iterations or repeats: more would run until the time limit stops it
COUNTS = {"iterations": 1, "repeats": 1, "warmup": 0, "batch_size": 1, "jobs": 1}  # each count's least


def check_count(name: str, value: Any, minimum: Optional[int] = None) -> int:
    """A count (iterations, warmup, repeats, ...) as an int from its least (COUNTS) to MAX_COUNT: a bool, a float, a
    string or a number out of range is a UsageError naming the argument and the value (the marker's options at
    collection and RunSpec.validate alike)."""
    least = COUNTS.get(name, 0) if minimum is None else minimum
    if not isinstance(value, int) or isinstance(value, bool) or not least <= value <= MAX_COUNT:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise UsageError(f"Invalid value for argument `{name}`. Received: {name}={shown}. Expected "
                         f"{'a positive integer' if least == 1 else f'an integer >= {least}'} and <= {MAX_COUNT:.0e}.")
    return value


def check_trace(value: Any) -> int:
    """`trace` (the number of sites a trace shows; 0 off) as an int >= 0: a bool, a float or a string is a UsageError
    naming the value (RunSpec.validate and the pytest marker's `trace` at collection alike)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise UsageError(f"Invalid value for argument `trace`. Received: trace={value!r}. "
                         "Expected 0 (off) or the number of sites to show.")
    return value


def shared_memory_cap(jobs: int = 1) -> int:
    """The memory cap of one worker's process tree when none is given: $KERASBENCH_MEMORY_CAP when set, else half of
    the machine's memory shared between the `jobs` workers running at once (never below MIN_MEMORY_CAP)."""
    if os.environ.get("KERASBENCH_MEMORY_CAP"):
        return parse_bytes(os.environ["KERASBENCH_MEMORY_CAP"], "$KERASBENCH_MEMORY_CAP", MIN_MEMORY_CAP)
    import psutil

    return max(MIN_MEMORY_CAP, psutil.virtual_memory().total // 2 // jobs)


@dataclasses.dataclass(frozen=True)
class RunSpec(SpecFields):
    """Everything that decides a measurement; recorded with its result. Its fields, with their defaults, are
    SpecFields' (kerasbench.specfields: the record's spec is made from them too)."""

    @classmethod
    def of_record(cls, spec: Mapping[str, Any]) -> "RunSpec":
        """The spec a record says it was measured with (its "spec"), not checked again: fields this kerasbench does
        not know are left out, ones the record lacks take their defaults (score's replays, a record judged again)."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{name: value for name, value in spec.items() if name in known})

    @property
    def budgeted(self) -> bool:
        """Whether the count is the protocol's to choose (a profile's budget), not a fixed number of iterations."""
        return self.min_iterations > 0

    @property
    def first_count(self) -> int:
        """The fewest iterations this spec measures (all of them for a fixed count)."""
        return min(self.min_iterations, self.iterations) if self.budgeted else self.iterations

    @property
    def period(self) -> int:
        """Iterations before this spec's inputs repeat: its strategy's period (1 for a strategy this kerasbench
        lacks: a record's, judged again). What the rule reads (kerasbench.rule.run)."""
        try:
            return get_strategy(self.strategy).period
        except UsageError:
            return 1

    @property
    def settles(self) -> bool:
        """Whether the measured process runs TensorFlow, in process (its heap settles as TF's: rule.settling); a
        process_isolation parent never imports TF. False for a loop or strategy this kerasbench lacks."""
        return settles(self.loop, self.strategy)

    def counts_text(self) -> str:
        """The counts for people: '8 iterations', or '20 s of loop (8-5000 iterations, until decided)'."""
        if not self.budgeted:
            return f"{self.iterations} iterations"
        return (f"{self.budget:g} s of loop ({self.first_count}-{self.iterations} iterations"
                f"{', until decided' if self.sequential else ''})")

    def validate(self) -> "RunSpec":
        """This spec checked (UsageError naming the first bad field) with its defaults filled: a new RunSpec (the
        same one when nothing was filled). Checking a checked spec again changes nothing."""
        resolved: dict = {}
        shape = get_loop(self.loop)
        get_strategy(self.strategy)
        if shape.needs_file:
            if not self.repro:
                raise UsageError(f"Loop {self.loop} measures your own file: give it with --repro FILE (RunSpec.repro).")
            from . import repro

            resolved["repro"] = repro.check(self.repro)
        elif self.repro:
            raise UsageError(f"A repro file is measured as loop repro, not {self.loop}. "
                             f"Received: repro={self.repro!r}.")
        if self.python and not os.access(self.python, os.X_OK):
            raise UsageError(f"Cannot run the worker interpreter {self.python}: not an executable file.")
        for name in ("iterations", "repeats", "batch_size", "jobs", "warmup"):  # a bool is an int, not a count
            check_count(name, getattr(self, name))
        check_trace(self.trace)
        if not isinstance(self.min_iterations, int) or isinstance(self.min_iterations, bool) or self.min_iterations < 0:
            raise UsageError(f"Invalid value for argument `min_iterations`. Received: "
                             f"min_iterations={self.min_iterations!r}. Expected 0 (a fixed count) or more.")
        resolved["budget"] = check_number(self.budget, "budget (seconds of loop)")
        resolved["min_seconds"] = check_number(self.min_seconds, "min_seconds (seconds of loop)")
        resolved["max_growth"] = int(check_number(self.max_growth, "max_growth (bytes)"))
        if (self.sequential or resolved["budget"] or resolved["min_seconds"]) and not self.budgeted:
            raise UsageError("A budget, min_seconds or sequential looks need min_iterations > 0 (a budgeted run); "
                             f"a fixed count is exactly iterations={self.iterations}.")
        resolved["time_limit"] = check_number(self.time_limit, "time_limit (--time-limit, seconds)", MIN_TIME_LIMIT)
        if self.device not in DEVICES:
            raise unknown("device", self.device, DEVICES)
        if self.backend and self.backend not in _compat.BACKENDS:
            raise unknown("backend", self.backend, _compat.BACKENDS)
        _compat.check_backend_var()  # the workers' backend when the spec names none: a bad one is an error here
        allocators.require(self.allocator)
        if self.floor is not None:
            resolved["floor"] = check_growth(self.floor, "floor (--floor-kib, bytes)")
        else:
            calibration_store.load(self.allocator)  # a bad calibration file fails now; the record resolves the floor
        if self.memory_cap:
            resolved["memory_cap"] = int(check_number(self.memory_cap, "memory_cap (--memory-cap, bytes)",
                                                      MIN_MEMORY_CAP))
        else:  # several workers at once share the machine's default
            resolved["memory_cap"] = shared_memory_cap(self.jobs)
        leak = self.leak_bytes
        if not leak:
            kib = check_number(os.environ.get("KERASBENCH_LEAK_KIB") or 256, "$KERASBENCH_LEAK_KIB (KiB)",
                               maximum=MAX_LEAK_BYTES / KIB)
            leak = int(kib * KIB)
        resolved["leak_bytes"] = int(check_number(leak, "leak_bytes (--leak-kib)", maximum=MAX_LEAK_BYTES))
        changed = {k: v for k, v in resolved.items() if getattr(self, k) != v or type(getattr(self, k)) is not type(v)}
        return dataclasses.replace(self, **changed) if changed else self


COUNT_FIELDS = ("iterations", "min_iterations", "budget", "min_seconds", "sequential", "max_growth")


def count_fields(count: Any) -> dict:
    """RunSpec count fields from a count callback's answer: a dict of them (a profile's), a RunSpec (its own), or an
    int (exactly that many iterations)."""
    if isinstance(count, dict):
        return count
    if isinstance(count, RunSpec):
        return {name: getattr(count, name) for name in COUNT_FIELDS}
    return dict(zip(COUNT_FIELDS, (count, 0, 0.0, 0.0, False, 0)))


def settles(loop: str, strategy: str) -> bool:
    """RunSpec.settles of a (loop, strategy) pair by name (a record's: the settling calibration's candidates)."""
    try:
        return get_loop(loop).needs_tf and not get_strategy(strategy).isolate
    except UsageError:  # a record of a loop or strategy this kerasbench no longer has
        return False


def settling_candidate(record: dict) -> bool:
    """Whether a record's heap may be a negative of TF's settling calibration (rule.settling.derive): a TF pair in
    process whose inputs repeat every iteration (its strategy's period 1)."""
    loop, strategy = record.get("loop"), record.get("strategy")
    if not settles(loop, strategy):
        return False
    return get_strategy(strategy).period == 1
