"""Run profiles shared by the CLI and the asv suite: how many iterations, warm-ups and repeats.

Chosen by `--profile` on the command line or the KERASBENCH_PROFILE environment variable (which
is how `asv run` picks one); every record and asv benchmark version says which was used.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from .errors import unknown
from .units import GIB

if TYPE_CHECKING:
    from .strategies import Strategy

ENV_VAR = "KERASBENCH_PROFILE"


@dataclass(frozen=True)
class Profile:
    """How long a pair is measured: a time budget per worker within an iteration range, warm-ups and repeats.

    A pair measures at least `min_iterations` and `min_seconds` of loop, then until both of its verdicts (RSS and
    heap) are decided at a look (sequential; docs/protocol.md), `budget` seconds of loop are spent,
    `max_iterations` are done, or RSS grew by `max_growth`; the record says which. The count is not the unit
    (one iteration costs 1 ms in batch_stream, 1.4 s in sweep): time is, within those bounds.
    """

    name: str
    description: str
    budget: float  # seconds of measured loop per worker, at most
    min_seconds: float  # seconds of loop before a look may stop it
    min_iterations: int
    max_iterations: int
    warmup: int  # iterations before the baseline, at least (the record says how many more the data discarded)
    repeats: int
    # process_isolation pays a TensorFlow import (~5 s) per iteration; its parent's flatness shows in a few, but RSS
    # resolves its 128 KiB margin only from ~10 iterations (protocol 9): default and full measure 12 (quick's 3 say
    # the count needed).
    isolated_min: int
    isolated_max: int
    sequential: bool = True  # looks that stop a decided pair early (the reference measures its whole budget)
    max_growth: int = GIB  # RSS over the baseline that ends the loop: a leak this large is decided long before

    @property
    def iterations(self) -> int:
        """The most measured iterations of a pair (an in-process one)."""
        return self.max_iterations

    def counts_for(self, strategy: Strategy) -> dict:
        """The RunSpec count fields of a pair of `strategy` under this profile (fewer for isolated ones)."""
        low, high = (self.isolated_min, self.isolated_max) if strategy.isolate else (self.min_iterations,
                                                                                    self.max_iterations)
        if strategy.period > 1:  # inputs that repeat only every `period` iterations (120 batch sizes): growth while
            # they are new stops when they repeat, and the warm-up rule cuts at most half the series, so a run measures
            # two periods and a little more before it may judge whether growth persists
            from .stats import MIN_WINDOW  # here, not at the top: asv imports this module per benchmark (numpy costs)

            low = max(low, 2 * strategy.period + MIN_WINDOW)
            high = max(high, low)
        return {"iterations": high, "min_iterations": low, "budget": self.budget,
                "min_seconds": min(self.min_seconds, self.budget), "sequential": self.sequential,
                "max_growth": self.max_growth}

    def summary(self) -> str:
        """One line for `kerasbench list`."""
        looks = "stops once decided" if self.sequential else "measures the whole budget"
        return (f"{self.budget:g} s of loop per worker ({self.min_iterations}-{self.max_iterations} iterations, "
                f"at least {self.min_seconds:g} s; {looks}), {self.warmup} warm-up, {self.repeats} repeat(s): "
                f"{self.description}")


PROFILES = {
    p.name: p
    for p in (
        Profile("quick", "smoke test: every pair runs; large leaks are decided, small ones seldom", budget=6,
                min_seconds=1, min_iterations=8, max_iterations=2000, warmup=1, repeats=1, isolated_min=3,
                isolated_max=3),
        Profile("default", "verdicts for most pairs, leaks of tens of KiB per iteration", budget=20, min_seconds=3,
                min_iterations=8, max_iterations=5000, warmup=2, repeats=1, isolated_min=12, isolated_max=12),
        Profile("full", "smaller leaks, and repeats that must agree; slow", budget=60, min_seconds=10,
                min_iterations=12, max_iterations=20000, warmup=3, repeats=3, isolated_min=12, isolated_max=20),
        # The long runs every profile is scored against (kerasbench score, docs/reference/): the whole budget of
        # at least 150 iterations (120 past a steady state the warm-up rule finds within the first 30), 2 repeats.
        Profile("reference", "long runs that the other profiles are scored against; hours for the whole suite",
                budget=60, min_seconds=60, min_iterations=150, max_iterations=3000, warmup=3, repeats=2,
                isolated_min=12, isolated_max=30, sequential=False, max_growth=2 * GIB),
    )
}


def get_profile(name: Optional[str] = None) -> Profile:
    """The profile called `name`, else $KERASBENCH_PROFILE, else 'default'."""
    name = name or os.environ.get(ENV_VAR) or "default"
    try:
        return PROFILES[name]
    except KeyError:
        raise unknown("profile", name, PROFILES) from None
