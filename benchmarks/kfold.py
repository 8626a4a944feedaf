"""k-fold cross-validation: a fresh model per fold, fit on four fifths, evaluated on the fifth.

Same strategies as the sweep, on a loop whose data changes shape-preservingly per fold.
"""

from ._common import TIMEOUT, _LoopBenchmark, measure_loop


class KFold(_LoopBenchmark, loop="kfold"):

    # Declared in every class on purpose: asv keys the cache by this line, so an inherited
    # setup_cache would be shared between loop shapes.
    def setup_cache(self) -> dict:
        return measure_loop("kfold")

    setup_cache.timeout = TIMEOUT
