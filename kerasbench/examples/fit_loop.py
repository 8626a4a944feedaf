"""A fit loop from a typical "memory grows every iteration" report, as a kerasbench repro.

A small search written as a plain for loop: every iteration builds, compiles and fits a new
model. Measure it with and without the cleanup the reports argue about:

    kerasbench run --repro kerasbench/examples/fit_loop.py \
        --strategy rebuild_no_clear,clear_session_del_gc,reuse_model,process_isolation

and in another TF release with --tf 2.12.1 (an asv environment, created if missing).
"""

import numpy as np


def setup():
    """Once per process: the data every iteration trains on."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((512, 32), dtype=np.float32)
    y = (x[:, :4].sum(axis=1, keepdims=True) > 0).astype(np.float32)
    return {"x": x, "y": y}


def build(ctx):
    """A new model, as the reported loop makes one per configuration."""
    import tensorflow as tf

    model = tf.keras.Sequential([
        tf.keras.Input(shape=(32,)),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(1, activation="sigmoid"),
    ])
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    return model


def iteration(ctx, model):
    """The loop body: fit, then evaluate; the History is what user code usually keeps."""
    history = model.fit(ctx["x"], ctx["y"], epochs=2, batch_size=64, verbose=0)
    model.evaluate(ctx["x"], ctx["y"], batch_size=128, verbose=0)
    return history
