"""Every (loop shape, strategy) pair on the installed TensorFlow, with few iterations.

Each pair runs in its own fresh worker, as in a real measurement: no crash, no silent zero.
"""

import pytest

from kerasbench import LOOPS, RunSpec, measure, strategies_for

pytestmark = pytest.mark.tf

PAIRS = [(loop, s) for loop in LOOPS if LOOPS[loop].needs_tf and not LOOPS[loop].needs_file
         for s in strategies_for(loop)]
TRAINING = {"sweep", "kfold", "notebook", "batch_stream", "tf_data"}


@pytest.mark.parametrize("loop,strategy", PAIRS)
def test_pair_runs_and_reports(loop, strategy):
    record = measure(RunSpec(loop, strategy, iterations=2, warmup=1))
    assert record["status"] in ("ok", "skipped"), record["reason"]
    if record["status"] == "skipped":
        assert record["reason"]
        return
    s, env = record["summary"], record["environment"]
    assert env["tensorflow"] and env["keras"], "the versions actually imported are recorded"
    assert s["peak_loop"] > 0 and s["seconds_per_iter"] > 0
    assert s["retained"] is not None and s["objects_per_iter"] is not None
    if loop in TRAINING:
        assert s["train_traces"] >= 1
    if loop == "inference":
        assert s["predict_traces"] >= 1
    if loop == "tf1_graph":
        assert s["graph_ops"] is not None if strategy != "process_isolation" else s["child_peak"] > 0
    else:
        assert s["models_built"] >= 1
