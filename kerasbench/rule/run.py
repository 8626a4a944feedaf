"""What the rule reads of a run: the fields of kerasbench.spec.RunSpec it judges by, as a Protocol.

The rule takes a spec and reads these; it does not import the spec module (nor the loop and strategy registries
behind it): what a spec's loop and strategy mean to the rule (`period`, `settles`) the spec says itself.
"""

from __future__ import annotations

from typing import Optional, Protocol


class RunLike(Protocol):
    """A run as the rule reads it (kerasbench.spec.RunSpec is one)."""

    loop: str
    strategy: str
    iterations: int  # exactly these, or the most of a budgeted run
    min_iterations: int  # 0: a fixed count, no looks
    sequential: bool
    budget: float  # seconds of measured loop; 0: none
    min_seconds: float
    floor: Optional[float]  # a given margin (bytes/iteration); None: the series' default
    floor_source: str
    allocator: str  # whose calibration gives the resolution
    python: str  # the workers' interpreter ("" this one): their calibration

    @property
    def first_count(self) -> int: ...  # the fewest iterations measured

    @property
    def period(self) -> int: ...  # iterations before the inputs repeat (the strategy's; 1 for one not known)

    @property
    def settles(self) -> bool: ...  # whether the measured process runs TF in process (its heap settles as TF's)
