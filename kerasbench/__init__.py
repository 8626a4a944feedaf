"""kerasbench: what TensorFlow/Keras loops do to memory and tracing, per cleanup strategy and TF release.

Importing kerasbench never imports TensorFlow.
"""

__version__ = "0.1.0"

# Bump when what a record measures or means changes: asv benchmark versions follow it, so asv
# notices that results from before and after are not comparable.
SCHEMA_VERSION = 1

from .errors import Skip, UsageError  # noqa: E402
from .loops import LOOPS, get_loop  # noqa: E402
from .probes import METRICS  # noqa: E402
from .runner import RunSpec, measure  # noqa: E402
from .stats import fit_growth, verdict  # noqa: E402
from .strategies import CLEANUPS, STRATEGIES, get_strategy, strategies_for  # noqa: E402

__all__ = [
    "CLEANUPS",
    "LOOPS",
    "METRICS",
    "SCHEMA_VERSION",
    "STRATEGIES",
    "RunSpec",
    "Skip",
    "UsageError",
    "__version__",
    "fit_growth",
    "get_loop",
    "get_strategy",
    "measure",
    "strategies_for",
    "verdict",
]
