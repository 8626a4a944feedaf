"""tensorflow/tensorflow#30324: a Sequential model created in a loop and discarded at once, as that report's loop.

    kerasbench run --repro kerasbench/examples/reports/tf30324_model_in_loop.py --strategy rebuild_no_clear

The reporter's Dense(3000) on 3000 inputs (34 MiB of weights) is Dense(1000) on 1000 here (3.8 MiB): the
question is whether a discarded model's weights are ever given back, not how large they are.
"""

URL = "https://github.com/tensorflow/tensorflow/issues/30324"
TITLE = "Memory leak in eager mode when creating keras model in loop"
CLAIMED_GROWS = ("1.15", "2.0")  # reported on 1.15.0-dev20190629 with eager execution, labelled TF 2.0
CLAIMED_FLAT = ()
SYMPTOM = "used memory rises by about the model's weights (~34 MB) per model created, none given back"
STRATEGY = "rebuild_no_clear"  # a new model every iteration, nothing cleaned


def build(ctx):
    import tensorflow as tf

    return tf.keras.Sequential([tf.keras.Input(shape=(1000,)), tf.keras.layers.Dense(1000)])


def iteration(ctx, model):
    return None  # the reporter's loop body is the construction itself
