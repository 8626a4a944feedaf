"""keras-team/keras#9151: one model compiled again before every fit, as that report's loop.

    kerasbench run --repro kerasbench/examples/reports/keras9151_compile_in_loop.py --strategy reuse_model

The reporter keeps one model (its weights carry over) and calls compile() then fit() every episode.
"""
import numpy as np

URL = "https://github.com/keras-team/keras/issues/9151"
TITLE = "Memory usage exponentialy increases when model compiled inside a loop"
CLAIMED_GROWS = ("1",)  # January 2018, multi-backend Keras 2 on TF 1.x; the versions are not stated
CLAIMED_FLAT = ()
SYMPTOM = "memory grows with every compile() in the loop until it runs out"
STRATEGY = "reuse_model"  # one model; compile + fit every iteration


def setup():
    rng = np.random.default_rng(0)
    return {"x": rng.standard_normal((256, 16), dtype=np.float32), "y": rng.standard_normal((256, 5), dtype=np.float32)}


def build(ctx):
    import tensorflow as tf

    return tf.keras.Sequential([tf.keras.Input(shape=(16,)), tf.keras.layers.Dense(32, activation="relu"),
                                tf.keras.layers.Dense(5)])


def iteration(ctx, model):
    model.compile(loss="mse", optimizer="rmsprop")
    model.fit(ctx["x"], ctx["y"], epochs=1, batch_size=64, verbose=0)
