"""TF loop bodies for assert_no_growth's flakiness measurement (tests/flakiness.py) and its TF test.

Module level, so the fresh worker imports them by name. `predict` is a flat Keras predict loop;
`predict_leaking` is the same loop keeping a 64 KiB numpy buffer per iteration in a module-level list.
"""

import numpy as np

LEAK_BYTES = 64 * 1024
KEPT = []


def make_model():
    """setup(): a small compiled Keras model and a batch of inputs, once per worker."""
    import tensorflow as tf

    model = tf.keras.Sequential([tf.keras.Input((32,)), tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(0).standard_normal((256, 32), dtype=np.float32)
    return {"model": model, "x": x}


def predict(ctx):
    """One iteration: model.predict on the same batch; nothing kept."""
    ctx["model"].predict(ctx["x"], verbose=0)


def predict_leaking(ctx):
    """The same predict, plus LEAK_BYTES of written numpy buffer kept for good."""
    ctx["model"].predict(ctx["x"], verbose=0)
    KEPT.append(np.ones(LEAK_BYTES // 8))


KEEP16_BYTES = 16 * 1024


def predict_keep16(ctx):
    """The same predict, plus a written 16 KiB numpy buffer kept for good: a keeper of 16 KiB a call."""
    ctx["model"].predict(ctx["x"], verbose=0)
    KEPT.append(np.ones(KEEP16_BYTES // 8))


def call(ctx):
    """One iteration: the model called on the batch (model(x), no predict loop); nothing kept: a negative control."""
    ctx["model"](ctx["x"], training=False)
