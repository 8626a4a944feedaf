"""The seed documents' claims, measured on the installed TensorFlow (few iterations, fresh processes).

Only claims that hold with a wide margin on both Keras 2 (TF 2.12) and Keras 3 (TF 2.21) are
asserted; the figures themselves are in docs/findings.md and the issue notes.
"""

import pytest

from kerasbench import RunSpec, measure

pytestmark = pytest.mark.tf
MIB = 1024**2


def summary(loop, strategy, iterations=8, warmup=2):
    record = measure(RunSpec(loop, strategy, iterations=iterations, warmup=warmup))
    assert record["status"] == "ok", record["reason"]
    return record["summary"]


@pytest.fixture(scope="module")
def sweep():
    return {s: summary("sweep", s) for s in ("rebuild_no_clear", "reuse_model", "keep_outputs", "release_outputs")}


def test_rebuilding_without_clearing_grows(sweep):
    s = sweep["rebuild_no_clear"]
    assert s["verdict"] == "grows" and s["growth_per_iter"] > 1 * MIB


def test_reusing_the_model_grows_far_less(sweep):
    assert sweep["reuse_model"]["growth_per_iter"] < sweep["rebuild_no_clear"]["growth_per_iter"] / 5
    assert sweep["reuse_model"]["models_built"] == 1
    assert sweep["rebuild_no_clear"]["models_built"] == 10


def test_keeping_histories_grows_more_than_releasing_them(sweep):
    # A History holds its model: keeping it keeps the whole model alive.
    assert sweep["keep_outputs"]["growth_per_iter"] > sweep["release_outputs"]["growth_per_iter"] + 1 * MIB
    assert sweep["keep_outputs"]["objects_per_iter"] > sweep["release_outputs"]["objects_per_iter"]


def test_varying_batch_shapes_retrace_and_stable_ones_do_not():
    stable = summary("batch_stream", "stable_batch_shapes")
    varying = summary("batch_stream", "varying_batch_shapes")
    assert stable["models_built"] == varying["models_built"] == 1
    assert stable["function_traces"] == 1  # one tf.function, one input shape
    assert varying["function_traces"] == 10  # a new batch size every iteration: a trace each
    # Keras' own step functions use reduce_retracing: they retrace, but only until shapes relax.
    assert varying["train_traces"] > stable["train_traces"]
    assert varying["predict_traces"] > stable["predict_traces"]
    assert varying["train_traces"] < 10


def test_function_defined_in_the_loop_traces_every_iteration():
    s = summary("inference", "function_in_loop")
    assert s["function_traces"] == 10


def test_tf1_default_graph_grows_linearly_explicit_and_reset_do_not():
    ops = {}
    for strategy in ("tf1_default_graph", "tf1_sess_close", "tf1_explicit_graph", "tf1_reset_default_graph"):
        record = measure(RunSpec("tf1_graph", strategy, iterations=6, warmup=1))
        assert record["status"] == "ok", record["reason"]
        ops[strategy] = record["repeats"][0]["result"]["series"]["graph_ops"]
    for growing in ("tf1_default_graph", "tf1_sess_close"):  # sess.close() does not shrink the graph
        steps = {b - a for a, b in zip(ops[growing], ops[growing][1:])}
        assert len(steps) == 1 and steps.pop() > 0, ops[growing]
    assert set(ops["tf1_explicit_graph"]) == {0}
    assert set(ops["tf1_reset_default_graph"]) == {0}


def test_process_isolation_keeps_the_parent_flat():
    s = summary("sweep", "process_isolation", iterations=12, warmup=1)  # RSS resolves its 128 KiB margin from ~12
    assert s["verdict"] == "flat"
    assert s["peak_loop"] < 300 * MIB < s["child_peak"]  # TF lives in the children only
    assert s["train_traces"] >= 5  # counted in the children, reported to the parent
