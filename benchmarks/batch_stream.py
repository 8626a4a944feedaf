"""Streaming batches: train_on_batch, predict_on_batch and a served tf.function per batch.

The *_on_batch paths retrace on new batch sizes (tensorflow#34907); Keras 3's
reduce_retracing caps that, the plain tf.function does not.
"""

from ._common import TIMEOUT, _LoopBenchmark, measure_loop


class BatchStream(_LoopBenchmark, loop="batch_stream"):

    # Declared in every class on purpose: asv keys the cache by this line, so an inherited
    # setup_cache would be shared between loop shapes.
    def setup_cache(self) -> dict:
        return measure_loop("batch_stream")

    setup_cache.timeout = TIMEOUT
