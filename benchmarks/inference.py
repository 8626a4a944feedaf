"""Repeated inference with one model: model.predict(x) and a direct model(x).

varying_batch_shapes and function_in_loop are the retracing cases; keep_outputs keeps every
prediction alive.
"""

from ._common import TIMEOUT, _LoopBenchmark, measure_loop


class Inference(_LoopBenchmark, loop="inference"):

    # Declared in every class on purpose: asv keys the cache by this line, so an inherited
    # setup_cache would be shared between loop shapes.
    def setup_cache(self) -> dict:
        return measure_loop("inference")

    setup_cache.timeout = TIMEOUT
