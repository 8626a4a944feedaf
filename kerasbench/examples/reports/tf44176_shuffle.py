"""tensorflow/tensorflow#44176: a tf.data pipeline with shuffle() iterated to the end again and again.

    kerasbench run --repro kerasbench/examples/reports/tf44176_shuffle.py --strategy reuse_model

The pipeline is built once; every iteration opens a new iterator after the last one is exhausted, which the
report says leaves the old ShuffleDataset buffer behind. Elements of 16 KiB, a 512-element buffer (8 MiB).
"""

URL = "https://github.com/tensorflow/tensorflow/issues/44176"
TITLE = "Massive memory leaks due to data.Dataset.shuffle"
CLAIMED_GROWS = ("2.3",)  # the reporter's 2.3.1
CLAIMED_FLAT = ()
SYMPTOM = "each new iterator over a shuffled dataset keeps the previous shuffle buffer: growth per pass until OOM"
STRATEGY = "reuse_model"  # the pipeline built once; a full pass every iteration


def setup():
    import numpy as np

    return {"x": np.random.default_rng(0).standard_normal((1024, 4096), dtype=np.float32)}


def build(ctx):
    import tensorflow as tf

    return tf.data.Dataset.from_tensor_slices(ctx["x"]).shuffle(512).batch(64)


def iteration(ctx, model):
    for _ in model:
        pass
