"""tensorflow/tensorflow#61791: a subclassed model built and fitted per loop iteration, clear_session() after each.

    kerasbench run --repro kerasbench/examples/reports/tf61791_fit_clear_session.py --strategy clear_session_del_gc

The reporter's loop (also keras-team/tf-keras#286) builds a small tf.keras.Model subclass, fits it, and
calls clear_session() and gc.collect(); the strategy adds del + clear_session + gc.collect to every iteration.
"""
import numpy as np

URL = "https://github.com/tensorflow/tensorflow/issues/61791"
TITLE = "Memory leak when using tf.Model and tf.Model.fit() in a loop. clear_session() does not help"
CLAIMED_GROWS = ("2.11", "2.12", "2.13", "2.15")  # 2.15: the tf-nightly of 2023-09-04
CLAIMED_FLAT = ("2.9",)  # "the same code with TF 2.9.2 has an almost constant memory usage"
SYMPTOM = "RSS grows steadily over fit() calls in a loop until out of memory, clear_session() or not"
STRATEGY = "clear_session_del_gc"  # a new model per iteration, then del + clear_session + gc.collect


def setup():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((512, 28), dtype=np.float32)
    return {"x": x, "y": (x[:, :1] > 0).astype(np.float32)}


def build(ctx):
    import tensorflow as tf

    class MyModel(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = tf.keras.layers.Dense(64, activation="relu")
            self.out = tf.keras.layers.Dense(1, activation="sigmoid")

        def call(self, inputs):
            return self.out(self.hidden(inputs))

    model = MyModel()
    model.compile(optimizer="adam", loss="binary_crossentropy")
    return model


def iteration(ctx, model):
    model.fit(ctx["x"], ctx["y"], epochs=1, batch_size=64, verbose=0)
