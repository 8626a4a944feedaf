"""Run profiles shared by the CLI and the asv suite: how many iterations, warm-ups and repeats.

Chosen by `--profile` on the command line or the KERASBENCH_PROFILE environment variable (which
is how `asv run` picks one); every record and asv benchmark version says which was used.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from .errors import unknown

if TYPE_CHECKING:
    from .strategies import Strategy

ENV_VAR = "KERASBENCH_PROFILE"


@dataclass(frozen=True)
class Profile:
    """How many iterations, warm-ups and repeats a run measures."""

    name: str
    description: str
    iterations: int
    warmup: int
    repeats: int
    # process_isolation pays a TensorFlow import (~5 s) per iteration; its parent's flatness shows
    # in a few, so the cheaper profiles run it for fewer iterations.
    isolated_iterations: int

    def iterations_for(self, strategy: Strategy) -> int:
        """Measured iterations for `strategy` (a Strategy) under this profile."""
        return min(self.iterations, self.isolated_iterations) if strategy.isolate else self.iterations


PROFILES = {
    p.name: p
    for p in (
        Profile("quick", "smoke test: every pair runs, verdicts are weak", 4, 1, 1, isolated_iterations=2),
        Profile("default", "verdicts for leaks of megabytes per iteration", 8, 2, 1, isolated_iterations=4),
        Profile("full", "smaller leaks, and repeats that must agree; slow", 40, 3, 3, isolated_iterations=12),
    )
}


def get_profile(name: Optional[str] = None) -> Profile:
    """The profile called `name`, else $KERASBENCH_PROFILE, else 'default'."""
    name = name or os.environ.get(ENV_VAR) or "default"
    try:
        return PROFILES[name]
    except KeyError:
        raise unknown("profile", name, PROFILES) from None
