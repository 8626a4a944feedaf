"""Notebook re-runs: the same build and fit cells exec'd again in one long-lived namespace.

The namespace keeps `model`, `history` and `preds` alive between runs, as a kernel does.
"""

from ._common import TIMEOUT, _LoopBenchmark, measure_loop


class Notebook(_LoopBenchmark, loop="notebook"):

    # Declared in every class on purpose: asv keys the cache by this line, so an inherited
    # setup_cache would be shared between loop shapes.
    def setup_cache(self) -> dict:
        return measure_loop("notebook")

    setup_cache.timeout = TIMEOUT
