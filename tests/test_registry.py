"""Registries: names declared once, consistent with each other, importable without TensorFlow."""

import subprocess
import sys

import pytest

import kerasbench
from kerasbench import CLEANUPS, LOOPS, METRICS, STRATEGIES, UsageError, get_loop, get_strategy, strategies_for
from kerasbench.summary import summarize
from kerasbench.rule import spec_floors


def test_every_strategy_applies_to_known_loops():
    for s in STRATEGIES.values():
        assert s.applies_to, s.name
        assert s.applies_to <= set(LOOPS), s.name
        assert set(s.cleanup) <= set(CLEANUPS), s.name


def test_every_loop_has_strategies():
    for name in LOOPS:
        assert strategies_for(name), name


def test_the_worker_runs_a_strategys_cleanups_from_the_registry_after_each_iteration(monkeypatch):
    # one registry: the worker calls each cleanup's action by its name in Strategy.cleanup, in that order
    import dataclasses

    from kerasbench import strategies, worker
    from kerasbench.runner import RunSpec

    ran = []
    for name, cleanup in CLEANUPS.items():
        assert cleanup.name == name and cleanup.description, name
        monkeypatch.setitem(strategies.CLEANUPS, name,
                            dataclasses.replace(cleanup, action=lambda pair, name=name: ran.append(name)))
    order = ("gc_collect", "del_model", "malloc_trim")
    strategy = strategies.Strategy("t", "test", frozenset({"control"}), model="rebuild", cleanup=order)
    pair = worker.MeasuredPair(RunSpec("control", "control_noop"), LOOPS["control"], strategy)
    pair.setup()
    pair.iteration(0)
    pair.iteration(1)
    assert ran == list(order) * 2


def test_the_cleanups_that_need_no_tensorflow_do_what_they_say():
    import gc
    import weakref

    from kerasbench import worker
    from kerasbench.runner import RunSpec

    pair = worker.MeasuredPair(RunSpec("control", "control_noop"), LOOPS["control"], get_strategy("control_noop"))
    pair.setup()
    pair.model = object()
    CLEANUPS["del_model"].action(pair)
    assert pair.model is None

    class Node:
        pass

    gc.disable()
    try:
        cycle = Node()
        cycle.self = cycle
        alive = weakref.ref(cycle)
        del cycle
        assert alive() is not None  # a cycle: only the collector frees it
        CLEANUPS["gc_collect"].action(pair)
        assert alive() is None
    finally:
        gc.enable()


def test_names_are_identifiers():
    for name in list(LOOPS) + list(STRATEGIES) + list(METRICS):
        assert name.isidentifier() and name == name.lower(), name


@pytest.mark.parametrize("lookup,kind", [(get_loop, "loop"), (get_strategy, "strategy")])
def test_unknown_name_lists_the_valid_ones(lookup, kind):
    with pytest.raises(UsageError) as e:
        lookup("nope")
    message = str(e.value)
    assert f"{kind}='nope'" in message
    registry = LOOPS if kind == "loop" else STRATEGIES
    assert all(name in message for name in registry)


def test_summary_has_every_metric():
    from kerasbench.runner import RunSpec

    spec = RunSpec("control", "control_noop")
    summary = summarize([], spec, spec_floors(spec))
    assert set(METRICS) <= set(summary)


def test_public_api_matches_all():
    import importlib

    for name in kerasbench.__all__:  # each public name is the object of the module that defines it
        value = getattr(kerasbench, name)
        home = importlib.import_module(getattr(value, "__module__", None) or "kerasbench")
        assert getattr(home, name, value) is value, name
    assert set(kerasbench.__all__) <= set(dir(kerasbench))
    with pytest.raises(AttributeError, match="nope"):
        kerasbench.nope


@pytest.mark.parametrize("module", ["kerasbench", "kerasbench.cli", "kerasbench.worker", "kerasbench.runner"])
def test_import_does_not_import_tensorflow(module):
    code = f"import sys, {module}; print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_registries_import_nothing_heavy():
    # asv starts a process per benchmark and parameter: its imports must stay cheap.
    code = "import sys, kerasbench.strategies, kerasbench.probes, kerasbench.profiles, benchmarks._common; " \
           "print(sorted({'numpy', 'scipy', 'tensorflow', 'psutil'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
