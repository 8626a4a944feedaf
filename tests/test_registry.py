"""Registries: names declared once, consistent with each other, importable without TensorFlow."""

import subprocess
import sys

import pytest

import kerasbench
from kerasbench import CLEANUPS, LOOPS, METRICS, STRATEGIES, UsageError, get_loop, get_strategy, strategies_for
from kerasbench.summary import summarize
from kerasbench.protocol import spec_floors


def test_every_strategy_applies_to_known_loops():
    for s in STRATEGIES.values():
        assert s.applies_to, s.name
        assert s.applies_to <= set(LOOPS), s.name
        assert set(s.cleanup) <= set(CLEANUPS), s.name


def test_every_loop_has_strategies():
    for name in LOOPS:
        assert strategies_for(name), name


def test_worker_implements_every_cleanup():
    # one registry: each cleanup's name, description and the function the worker calls with its measured pair
    for name, cleanup in CLEANUPS.items():
        assert cleanup.name == name and cleanup.description, name
        assert callable(cleanup.action), name


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
    for name in kerasbench.__all__:
        assert getattr(kerasbench, name) is not None, name
    with pytest.raises(AttributeError):
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
