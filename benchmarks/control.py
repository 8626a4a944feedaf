"""Controls without TensorFlow: an empty loop and leaks of known size.

They show this machine's noise floor next to the TF results (gpu cells are always n/a).
"""

from ._common import TIMEOUT, _LoopBenchmark, measure_loop


class Control(_LoopBenchmark, loop="control"):

    # Declared in every class on purpose: asv keys the cache by this line, so an inherited
    # setup_cache would be shared between loop shapes.
    def setup_cache(self) -> dict:
        return measure_loop("control")

    setup_cache.timeout = TIMEOUT
