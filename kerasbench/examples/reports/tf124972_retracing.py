"""tensorflow/tensorflow#124972: a tf.function retraced for new input shapes, released with del, gc and clear_session.

    kerasbench run --repro kerasbench/examples/reports/tf124972_retracing.py --strategy clear_session_del_gc

Every iteration defines a new tf.function (build) and calls it on 8 sequence lengths it has not seen, so it
traces 8 graphs; the strategy then does what the report says does not help: del, clear_session, gc.collect.
"""

URL = "https://github.com/tensorflow/tensorflow/issues/124972"
TITLE = "@tf.function re-tracing causes unbounded memory growth — traced graphs are never garbage collected"
CLAIMED_GROWS = ("2.20", "2.21")  # and tf-nightly
CLAIMED_FLAT = ()
SYMPTOM = "each retrace's graph stays in memory after del, gc.collect() and clear_session(): unbounded growth"
STRATEGY = "clear_session_del_gc"  # a new function per iteration, then del + clear_session + gc.collect


def setup():
    import numpy as np

    rng = np.random.default_rng(0)
    return {"inputs": [rng.standard_normal((4, n, 16), dtype=np.float32) for n in range(3, 11)]}


def build(ctx):
    import tensorflow as tf

    @tf.function
    def encode(x):
        return tf.reduce_sum(tf.nn.relu(tf.matmul(x, tf.transpose(x, [0, 2, 1]))), axis=-1)

    return encode


def iteration(ctx, model):
    for x in ctx["inputs"]:
        model(x)
