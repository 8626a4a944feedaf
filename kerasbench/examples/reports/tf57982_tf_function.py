"""tensorflow/tensorflow#57982: a trivial tf.function called over and over with one input, as that report's loop.

    kerasbench run --repro kerasbench/examples/reports/tf57982_tf_function.py --strategy reuse_model

The reporter's function returns its input; one iteration here is 500 calls (no model: build returns None).
"""

URL = "https://github.com/tensorflow/tensorflow/issues/57982"
TITLE = "Ram memory leak when using tf.function at tf 2.8,2.9 and 2.10, doesn't happen with tf 2.5"
CLAIMED_GROWS = ("2.8", "2.9", "2.10", "2.11")  # 2.11: confirmed in the thread (and #50765)
CLAIMED_FLAT = ("2.5",)
SYMPTOM = "a small but steady RSS growth per call of an unchanged tf.function (no retracing)"
STRATEGY = "reuse_model"  # one function traced once, called every iteration


def setup():
    import tensorflow as tf

    @tf.function
    def operate(img):
        return img

    return {"operate": operate, "img": tf.zeros((6, 6, 7))}


def build(ctx):
    return None


def iteration(ctx, model):
    for _ in range(500):
        ctx["operate"](ctx["img"])
