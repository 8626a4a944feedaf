"""Every tf.function trace counted, per function (the hook on TF's tracing entry point), and the peak of a transient
working set (over the RSS after setup, and the first iteration's own): known answers, without and with TF."""

import json
import subprocess
import sys
import textwrap

import pytest

from kerasbench import counters
from kerasbench.runner import RunSpec, measure

MIB = 1024**2


# ---------------------------------------------------------------- the counters, without TF


@pytest.fixture
def fresh(monkeypatch):
    """Empty tracing tables for one test (the module keeps them per process)."""
    monkeypatch.setattr(counters, "_GROUPS", {})
    monkeypatch.setattr(counters, "_LIVE", {})
    monkeypatch.setattr(counters, "_RETIRED", [])
    monkeypatch.setattr(counters, "_PRUNE", {"at": 64})
    monkeypatch.setattr(counters, "_TRACING", type(counters._TRACING)())


class Cache:
    """Stands in for a tf.function's cache of concrete functions: like TF's FunctionCache, it takes no weak
    reference (__slots__ without __weakref__), and it says when it is freed."""

    __slots__ = ("freed",)

    def __init__(self, freed=None):
        self.freed = freed

    def __del__(self):
        if self.freed is not None:
            self.freed.append(True)


class Concrete:
    """Stands in for a ConcreteFunction, and for what holds a tf.function's cache (TracingOptions, or the
    TracingCompiler on TF 2.12/2.13): both take weak references."""


Owner = Concrete


def user_fn():
    pass


def trace(name, fn, cache, made=None, owner=None):
    counters.trace_ended(counters.trace_started(name, fn, cache, owner), made)
    return made


def test_each_trace_is_counted_for_its_function_and_nested_ones_are_its_own(fresh):
    outer_cache, inner_cache = Cache(), Cache()
    held = []  # the concrete functions the two instances' caches would hold
    for _ in range(2):
        outer = counters.trace_started("train_function", user_fn, outer_cache)
        inner = counters.trace_started("map_fn", len, inner_cache)  # traced while the outer one traces
        counters.count_trace("train_step")  # a step traced inside both: both are on the training path
        held.append(Concrete())
        counters.trace_ended(inner, held[-1])
        held.append(Concrete())
        counters.trace_ended(outer, held[-1])
    rows = {r["name"]: r for r in counters.functions()}
    assert rows["train_function"]["traces"] == 2 and rows["train_function"]["instances"] == 1
    assert rows["train_function"]["owner"] == "user" and rows["train_function"]["held"] == 2
    assert rows["map_fn"]["paths"] == rows["train_function"]["paths"] == ["train"]
    assert counters.all_traces() == 4 and counters.path_traces("train") == 4 and counters.path_traces("predict") == 0


def test_a_new_instance_per_iteration_is_counted_and_freed_ones_hold_nothing(fresh):
    for _ in range(3):
        cache = Cache()
        made = trace("forward", user_fn, cache, Concrete())
        del cache, made  # the tf.function made in the loop is dropped: its cache and concrete function go with it
    [row] = counters.functions()
    assert (row["instances"], row["traces"], row["live"], row["held"]) == (3, 3, 0, 0)


def test_the_counters_keep_nothing_of_what_they_count_alive(fresh):
    freed, kept, owners = [], [], []
    for i in range(200):  # more instances than the tables keep before they prune the dead ones
        owner = Owner()
        owner.cache = Cache(freed)  # what holds a tf.function's cache (its TracingOptions) lives as long as it
        made = trace("forward", user_fn, owner.cache, Concrete(), owner)
        if i % 50 == 0:
            kept.append(made)  # the loop keeps a few concrete functions alive: those are "held"
        if i % 100 == 0:
            owners.append(owner)  # and two tf.functions: those are "live"
        del owner, made  # CPython then gives the next cache the same id: a new instance all the same
    assert len(freed) == 198  # every cache was freed as soon as the loop dropped its tf.function
    [row] = counters.functions()
    assert (row["instances"], row["traces"], row["live"], row["held"]) == (200, 200, 2, 4)
    assert len(counters._LIVE) + len(counters._RETIRED) < 64  # instances with nothing alive are dropped
    kept.clear()
    owners.clear()
    assert (counters.functions()[0]["live"], counters.functions()[0]["held"]) == (0, 0)


def test_an_instance_in_its_first_trace_survives_a_prune(fresh, monkeypatch):
    monkeypatch.setattr(counters, "_PRUNE", {"at": 1})  # prune at every new instance
    outer_cache = Cache()
    outer = counters.trace_started("train_function", user_fn, outer_cache)
    counters.trace_ended(counters.trace_started("map_fn", len, Cache()), None)  # a new instance: a prune
    made = Concrete()
    counters.trace_ended(outer, made)
    trace("train_function", user_fn, outer_cache, Concrete())  # the same instance again
    rows = {r["name"]: r for r in counters.functions()}
    assert (rows["train_function"]["instances"], rows["train_function"]["traces"]) == (1, 2)
    assert rows["train_function"]["held"] == 1  # `made`; the second concrete function was dropped at once


@pytest.mark.parametrize("module,qualname,owner", [
    ("keras.src.backend.tensorflow.trainer", "TensorFlowTrainer._make_function.<locals>.one_step_on_data",
     "keras wrapper"),
    ("tf_keras.src.engine.training", "Model.make_train_function.<locals>.train_function", "keras wrapper"),
    ("keras.src.engine.training", "Model.train_step", "keras step"),
    ("tensorflow.python.data.ops.structured_function", "wrapped_fn", "tf.data"),
    ("tensorflow.python.eager.polymorphic_function.polymorphic_function", "initialize_variables", "tensorflow"),
    ("kerasbench._compat", "traced_function.<locals>.body", "loop"),
    ("__main__", "serve", "user"), ("kerasx", "f", "user"),
])
def test_owners_come_from_the_module(module, qualname, owner):
    assert counters.owner_of(module, qualname) == owner


def test_a_childs_functions_count_as_the_parents(fresh):
    counters.add_child_functions([{"owner": "keras wrapper", "module": "keras.x", "function": "train_function",
                                   "name": "train_function", "instances": 1, "live": 1, "traces": 2, "held": 2,
                                   "paths": ["train"]}] * 3)
    [row] = counters.functions()
    assert (row["instances"], row["traces"], row["held"]) == (3, 6, 0)  # the children hold nothing any more
    assert counters.path_traces("train") == 6


# ---------------------------------------------------------------- with TensorFlow: the hook catches every trace

SCENARIOS = textwrap.dedent("""
    import json, sys
    import numpy as np
    from kerasbench import _compat, counters
    tf = _compat.tf()

    @tf.function
    def per_call(x):  # a Python number: a new trace for every value
        return x * 2

    @tf.function
    def by_shape(x):  # a trace per new shape only
        return x + 1

    @tf.function(reduce_retracing=True)
    def relaxed(x):  # generalises to an unknown dimension after the second shape
        return x + 1

    for i in range(5):
        per_call(i)
    for n in (1, 2, 3, 1, 2, 3):
        by_shape(tf.zeros((n,)))
    for n in (1, 2, 3, 4, 5):
        relaxed(tf.zeros((n,)))
    model = _compat.small_model()
    x, y = np.zeros((64, 20), np.float32), np.zeros((64, 1), np.float32)
    model.fit(x, y, epochs=1, batch_size=32, verbose=0)
    model.train_on_batch(x[:32], y[:32])
    model.predict_on_batch(x[:8])
    for _ in tf.data.Dataset.from_tensor_slices(x).map(lambda t: t * 2).batch(8):
        pass
    print(json.dumps({"hook": counters.hook_state(), "functions": counters.functions(),
                      "all": counters.all_traces(), "train": counters.path_traces("train"),
                      "predict": counters.path_traces("predict"), "train_step": counters.traces("train_step"),
                      "predict_step": counters.traces("predict_step")}))
""")


@pytest.fixture(scope="module")
def traced():
    out = subprocess.run([sys.executable, "-c", SCENARIOS], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    got["by"] = {f["function"].rsplit(".", 1)[-1]: f for f in got["functions"]}
    return got


@pytest.mark.tf
def test_the_hook_is_installed_on_this_tf(traced):
    assert traced["hook"].startswith("installed (tracing_compil")


@pytest.mark.tf
def test_a_function_that_retraces_every_call_is_seen(traced):
    f = traced["by"]["per_call"]
    assert (f["owner"], f["instances"], f["traces"], f["held"]) == ("user", 1, 5, 5)


@pytest.mark.tf
def test_new_shapes_retrace_and_reduce_retracing_relaxes_them(traced):
    assert traced["by"]["by_shape"]["traces"] == 3 and traced["by"]["by_shape"]["held"] == 3
    assert traced["by"]["relaxed"]["traces"] == 2  # sizes 1, then (None,) for all the others


@pytest.mark.tf
def test_keras_fit_train_on_batch_and_predict_on_batch_are_on_their_paths(traced):
    train = [f for f in traced["functions"] if "train" in f["paths"]]
    predict = [f for f in traced["functions"] if "predict" in f["paths"]]
    assert train and predict and all(f["owner"] == "keras wrapper" for f in train + predict)
    assert traced["train"] == sum(f["traces"] for f in train) >= traced["train_step"] >= 2  # fit and train_on_batch
    assert traced["predict"] == sum(f["traces"] for f in predict) >= traced["predict_step"] >= 1
    assert any(f["owner"] == "tf.data" for f in traced["functions"])  # the dataset's map function
    assert traced["all"] == sum(f["traces"] for f in traced["functions"])


@pytest.mark.tf
def test_a_measured_pair_records_every_function(tmp_path):
    record = measure(RunSpec("batch_stream", "varying_batch_shapes", iterations=6, warmup=1))
    result, s = record["repeats"][0]["result"], record["summary"]
    served = next(f for f in result["functions"] if f["owner"] == "loop")
    assert served["traces"] == served["held"] == 7  # one batch size per iteration, warm-up included
    assert s["all_traces"] == result["all_traces"] >= served["traces"] + s["train_path_traces"]
    assert result["series"]["all_traces"][-1] == result["all_traces"]


DROPPED = textwrap.dedent("""
    import gc, json, sys
    from kerasbench import _compat, counters
    tf = _compat.tf() if sys.argv[1] == "hooked" else __import__("tensorflow")
    from tensorflow.python.eager.polymorphic_function import concrete_function

    def alive():
        gc.collect()
        return sum(isinstance(o, concrete_function.ConcreteFunction) for o in gc.get_objects())

    before = None
    for i in range(40):  # a tf.function made, called and dropped every iteration (a user's loop)
        f = tf.function(lambda x: x * 2)
        f(tf.constant(float(i)))
        del f
        if i == 9:
            before = alive()
    print(json.dumps({"before": before, "after": alive(), "hook": counters.hook_state(),
                      "functions": counters.functions()}))
""")


@pytest.mark.tf
def test_the_hook_keeps_no_traced_function_alive():
    got = {}
    for mode in ("hooked", "bare"):
        out = subprocess.run([sys.executable, "-c", DROPPED, mode], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        got[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    hooked, bare = got["hooked"], got["bare"]
    assert hooked["hook"].startswith("installed") and bare["hook"] == "not installed"
    assert hooked["after"] == hooked["before"] == bare["after"]  # the 30 dropped functions are gone, as without it
    [row] = [f for f in hooked["functions"] if f["function"].endswith("<lambda>")]
    assert (row["instances"], row["traces"], row["live"], row["held"]) == (40, 40, 0, 0)


# ---------------------------------------------------------------- the peak of a transient working set

TRANSIENT = textwrap.dedent("""
    import numpy as np

    def setup():
        return {"first": [True]}

    def iteration(ctx, model):
        if ctx["first"][0]:  # only the first iteration needs a large working set, then frees it
            ctx["first"][0] = False
            buffer = np.ones(300 * 1024 * 1024 // 8)
            del buffer
""")


def test_a_first_iterations_working_set_is_seen_over_the_setup(tmp_path):
    path = tmp_path / "transient.py"
    path.write_text(TRANSIENT)
    record = measure(RunSpec("repro", "reuse_model", iterations=8, warmup=1, repro=str(path)))
    s = record["summary"]
    # 300 MiB touched, less what the kernel took back meanwhile: the worker's RSS counts its mapped libraries, and a
    # machine whose page cache is full reclaims some (a CI run beside two TF lanes: 289.5 MiB). Well above the
    # post-warm-up figures' 16 MiB either way.
    seen = 256 * MIB
    assert s["first_iteration_peak"] >= seen and s["peak_over_setup"] >= seen
    assert abs(s["peak_over_baseline"]) < 16 * MIB  # the post-warm-up figures never see it
    no_warmup = measure(RunSpec("repro", "reuse_model", iterations=8, warmup=0, repro=str(path)))["summary"]
    assert no_warmup["first_iteration_peak"] >= seen  # the first measured iteration was the first
