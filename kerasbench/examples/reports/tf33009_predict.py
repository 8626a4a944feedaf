"""tensorflow/tensorflow#33009: model.predict on a tiny model, called in a loop, as that report's loop.

    kerasbench run --repro kerasbench/examples/reports/tf33009_predict.py --strategy reuse_model

The reporter builds Input(10) -> Dense(32) -> Dense(2) once and calls predict() on one dummy row forever;
here one iteration is 5 of those calls.
"""
import numpy as np

URL = "https://github.com/tensorflow/tensorflow/issues/33009"
TITLE = "Memory leak"
CLAIMED_GROWS = ("2.0",)  # the reporter's TF 2.0.0 (CPU and GPU)
CLAIMED_FLAT = ("1.14",)  # "the problem disappears on 1.14.0"
SYMPTOM = "RSS grows without bound while predict() is called in a loop (over 10 GB in 10 minutes)"
STRATEGY = "reuse_model"  # one model, predict every iteration, nothing kept


def setup():
    return {"x": np.ones((1, 10), dtype=np.float32)}


def build(ctx):
    import tensorflow as tf

    inputs = tf.keras.Input(shape=(10,))
    hidden = tf.keras.layers.Dense(32)(inputs)
    return tf.keras.Model(inputs, tf.keras.layers.Dense(2)(hidden))


def iteration(ctx, model):
    for _ in range(5):
        model.predict(ctx["x"], verbose=0)
