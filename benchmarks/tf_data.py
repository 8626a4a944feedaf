"""Input pipelines: model.fit on one reused tf.data pipeline, or a new one every iteration.
"""

from ._common import TIMEOUT, _LoopBenchmark, measure_loop


class TfData(_LoopBenchmark, loop="tf_data"):

    # Declared in every class on purpose: asv keys the cache by this line, so an inherited
    # setup_cache would be shared between loop shapes.
    def setup_cache(self) -> dict:
        return measure_loop("tf_data")

    setup_cache.timeout = TIMEOUT
