"""Hyperparameter sweep: a new small model per configuration (units, learning rate), fit and evaluated.

The strategies that rebuild a model show what each cleanup call buys; reuse_model and
process_isolation are the two ways out the seeds recommend.
"""

from ._common import TIMEOUT, _LoopBenchmark, measure_loop


class Sweep(_LoopBenchmark, loop="sweep"):

    # Declared in every class on purpose: asv keys the cache by this line, so an inherited
    # setup_cache would be shared between loop shapes.
    def setup_cache(self) -> dict:
        return measure_loop("sweep")

    setup_cache.timeout = TIMEOUT
