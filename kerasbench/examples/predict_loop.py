"""model.predict called in a loop, as in the many "predict leaks memory" reports, as a kerasbench repro.

    kerasbench run --repro kerasbench/examples/predict_loop.py --strategy reuse_model,keep_outputs,release_outputs
"""

import numpy as np


def setup():
    return {"x": np.random.default_rng(0).standard_normal((1024, 32), dtype=np.float32)}


def build(ctx):
    import tensorflow as tf

    return tf.keras.Sequential([tf.keras.Input(shape=(32,)), tf.keras.layers.Dense(128, activation="relu"),
                                tf.keras.layers.Dense(10)])


def iteration(ctx, model):
    """One request: predict a batch (what is returned is what a caller might keep)."""
    return model.predict(ctx["x"], batch_size=256, verbose=0)
