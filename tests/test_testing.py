"""kerasbench.testing.assert_no_growth on the controls: a leaking body fails with its numbers, a flat one passes."""

import numpy as np
import pytest

from kerasbench import UsageError
from kerasbench.console import SPARKS
from kerasbench.testing import assert_no_growth
from kerasbench.units import KIB

# 16x the default floor: the worker imports TF (the repro loop does), whose freed heap can absorb the first
# megabytes a body keeps; a leak this size shows its own slope after the warm-up.
LEAK = 1024 * KIB
KEPT = []


def leak_body():
    """Keeps a written numpy buffer of LEAK bytes per iteration (resident, like control_leak_native)."""
    KEPT.append(np.ones(LEAK // 8))


def flat_body():
    """Allocates and drops a buffer: RSS does not grow."""
    np.ones(LEAK // 8).sum()


def new_list():
    return []


def leak_into(ctx):
    ctx.append(np.ones(LEAK // 8))


class Box:
    """A GC-tracked object holding a buffer (a numpy array alone is not tracked: nothing could say what holds it)."""

    def __init__(self):
        self.data = np.ones(LEAK // 8)


BOXES = []


def boxing_body():
    BOXES.append(Box())  # the line that keeps them


def raising_body():
    raise ValueError("the body's own error")


module_lambda = lambda: None  # noqa: E731 -- bound at module level: the worker finds it by this name

QUICK = dict(iterations=20, warmup=4)  # RSS resolves its 64 KiB margin from ~18 iterations (protocol 9)


def test_flat_body_passes():
    record = assert_no_growth(flat_body, **QUICK)
    assert record["summary"]["verdict"] == "flat"
    assert record["loop"] == "repro" and record["strategy"] == "reuse_model"


def test_leaking_body_fails_with_slope_ci_floor_and_curve():
    with pytest.raises(AssertionError) as failed:
        assert_no_growth(leak_body, **QUICK)
    text = str(failed.value)
    assert "verdict grows" in text
    # the heap reads the known leak (RSS may lag: TF's freed heap, and what the young collections hand back before
    # each reading, absorb the first megabytes; protocol 8)
    heap = float(text.split("  heap ")[1].split(" KiB")[0])
    assert 0.98 * LEAK / KIB < heap < 1.02 * LEAK / KIB
    assert "judged by protocol 9" in text
    assert "95% CI [" in text and "margin 128 KiB/iteration (default margin), resolution " in text
    assert any(c in text for c in SPARKS[1:]) and "over 20 iterations" in text


def test_setup_context_reaches_the_body():
    with pytest.raises(AssertionError, match="verdict grows"):
        assert_no_growth(leak_into, setup=new_list, **QUICK)


def test_given_floor_decides():
    # A floor above the leak: the same body reads flat against it (the margin), and the record says so.
    record = assert_no_growth(leak_body, floor_kib=4 * LEAK / KIB, **QUICK)
    assert record["summary"]["margin"] == 4 * LEAK and record["summary"]["margin_source"].startswith("given")


def test_module_level_lambda_runs():
    assert assert_no_growth(module_lambda, **QUICK)["summary"]["verdict"] == "flat"


def test_lambda_and_nested_function_run_by_value():
    def nested(ctx):
        ctx.append(None)

    record = assert_no_growth(nested, setup=lambda: [], **QUICK)  # cloudpickle: no name the worker imports
    assert record["spec"]["body"] == "test_testing:test_lambda_and_nested_function_run_by_value.<locals>.nested"


def test_body_that_raises_is_an_error_naming_it():
    with pytest.raises(UsageError, match="^The body test_testing:raising_body failed in the worker: "
                                         "ValueError: the body's own error$"):
        assert_no_growth(raising_body, **QUICK)


def test_unknown_strategy_lists_the_valid_ones():
    with pytest.raises(UsageError, match="Unknown strategy.*reuse_model"):
        assert_no_growth(flat_body, strategy="nope")


@pytest.mark.tf
def test_tf_predict_body_flat_and_leaking():
    """tests/tf_bodies.py, as tests/flakiness.py runs them: predict reads flat, + 64 KiB/iteration grows (the default
    margins: RSS 64, heap 4 KiB/iteration)."""
    import tf_bodies

    # 60 iterations after 5 warm-up: predict's own heap grows ~+1.3 KiB/iteration on TF 2.21 / Keras 3 (protocol 8's
    # reading after a young collection), under the heap's 4 KiB margin at 60 iterations' resolution
    settings = dict(setup=tf_bodies.make_model, iterations=60, warmup=5)
    assert assert_no_growth(tf_bodies.predict, **settings)["summary"]["verdict"] == "flat"
    with pytest.raises(AssertionError, match="verdict grows"):
        assert_no_growth(tf_bodies.predict_leaking, **settings)


def test_a_failure_says_how_to_find_where_and_a_traced_one_says_where():
    with pytest.raises(AssertionError) as failed:
        assert_no_growth(leak_body, **QUICK)
    assert str(failed.value).splitlines()[-1].startswith("  where: run it again with trace=10")
    with pytest.raises(AssertionError) as failed:
        assert_no_growth(boxing_body, trace=5, **QUICK)
    text = str(failed.value)
    assert "where: run it again" not in text
    lead = next(line for line in text.splitlines() if line.startswith("  look first"))
    line = next(n for n, text in enumerate(open(__file__), 1) if "# the line that keeps them" in text)
    assert lead.startswith("  look first: Box ×") and "(+1.0/iteration) kept in `BOXES`, by " in lead, lead
    assert lead.endswith(f"test_testing.py:{line} `BOXES.append(Box())  # the line that keeps them`"), lead
    assert "held by list (len " in text and "module global `BOXES` in test_testing.py" in text
    assert "Python allocation sites" not in text  # the trace's own tail stays in the record
