"""Run profiles shared by the CLI and the asv suite: how many iterations, warm-ups and repeats.

Chosen by `--profile` on the command line or the KERASBENCH_PROFILE environment variable (which
is how `asv run` picks one); every record and asv benchmark version says which was used.
"""

import os
from dataclasses import dataclass

from .errors import unknown

ENV_VAR = "KERASBENCH_PROFILE"


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    iterations: int
    warmup: int
    repeats: int


PROFILES = {
    p.name: p
    for p in (
        Profile("quick", "smoke test: every pair runs, verdicts are weak", iterations=5, warmup=1, repeats=1),
        Profile("default", "a verdict for large leaks in reasonable time", iterations=12, warmup=2, repeats=1),
        Profile("full", "small leaks and repeat agreement; slow", iterations=40, warmup=3, repeats=3),
    )
}


def get_profile(name=None):
    """The profile called `name`, else $KERASBENCH_PROFILE, else 'default'."""
    name = name or os.environ.get(ENV_VAR) or "default"
    try:
        return PROFILES[name]
    except KeyError:
        raise unknown("profile", name, PROFILES) from None
