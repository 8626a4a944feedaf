"""TF1-style graph building through tf.compat.v1: default-graph growth vs explicit graphs,
reset_default_graph and sess.close (tensorflow#31419).
"""

from ._common import TIMEOUT, _LoopBenchmark, measure_loop


class Tf1Graph(_LoopBenchmark, loop="tf1_graph"):

    # Declared in every class on purpose: asv keys the cache by this line, so an inherited
    # setup_cache would be shared between loop shapes.
    def setup_cache(self) -> dict:
        return measure_loop("tf1_graph")

    setup_cache.timeout = TIMEOUT

