"""A batched forward pass of a large CNN (ResNet50, random weights: nothing downloaded), as users run inference.

    kerasbench run --tf 2.16.1 --repro kerasbench/examples/cnn_forward.py --strategy reuse_model
    kerasbench attribute --good 2.15.1 --bad 2.16.1 --repro kerasbench/examples/cnn_forward.py \
        --strategy reuse_model --metric peak_over_setup     # the peak over setup: 9x, carried by Keras 3

The first iteration reaches the working set (0.3 GiB over the setup on TF 2.15.1, 2.9 GiB on 2.16.1) and glibc
keeps the pages: the post-warm-up baseline already holds them, so only peak_over_setup sees the difference.
"""
import numpy as np


def setup():
    return {"x": np.random.default_rng(0).standard_normal((20, 224, 224, 3), dtype=np.float32)}


def build(ctx):
    import tensorflow as tf

    return tf.keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3), classes=1000)


def iteration(ctx, model):
    return model(ctx["x"], training=False).numpy()
