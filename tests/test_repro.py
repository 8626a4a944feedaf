"""Bring your own repro: the file contract, bad files as one-line errors, and real runs of the examples."""

import io
import pathlib

import pytest

from kerasbench import RunSpec, UsageError, measure, repro, strategies_for
from kerasbench.cli import main

EXAMPLES = pathlib.Path(repro.__file__).resolve().parent / "examples"
FIT_LOOP, PREDICT_LOOP = str(EXAMPLES / "fit_loop.py"), str(EXAMPLES / "predict_loop.py")


def call(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def test_examples_meet_the_contract():
    for path in (FIT_LOOP, PREDICT_LOOP):
        assert repro.check(path) == path


def test_repro_has_the_with_and_without_cleanup_strategies():
    names = strategies_for("repro")
    for name in ("rebuild_no_clear", "clear_session", "clear_session_del_gc", "reuse_model", "keep_outputs",
                 "release_outputs", "process_isolation"):
        assert name in names


@pytest.mark.parametrize("source,message", [
    ("def setup(:\n    pass\n", "is not valid Python: "),
    ("def step(ctx, model):\n    pass\n", "does not define iteration(ctx, model)"),
    ("def iteration(ctx):\n    pass\n", "iteration must be a plain function iteration(ctx, model)"),
    ("async def iteration(ctx, model):\n    pass\n", "iteration must be a plain function"),
    ("def iteration(ctx, model):\n    pass\ndef build():\n    pass\n", "build must be a plain function build(ctx)"),
    ("def iteration(ctx, model, *, k):\n    pass\n", "iteration must be a plain function"),
    (b"\xff\xfe not utf-8", "is not utf-8 text (Python's default encoding; byte 0)"),  # issue #61: the encoding named
])
def test_a_file_that_breaks_the_contract_is_a_one_line_error(tmp_path, source, message, capsys):
    path = tmp_path / "mine.py"
    path.write_bytes(source if isinstance(source, bytes) else source.encode())
    code, out = call(["run", "--repro", str(path), "--strategy", "reuse_model", "--iterations", "2"])
    err = capsys.readouterr().err
    assert code == 2 and out == ""
    assert message in err and str(path) in err and err.count("\n") == 1


def test_flexible_signatures_are_accepted(tmp_path):
    path = tmp_path / "ok.py"
    path.write_text("def setup(seed=0):\n    return seed\n"
                    "def build(*args):\n    return None\n"
                    "def iteration(ctx, model, extra=None):\n    return None\n")
    assert repro.check(str(path)) == str(path)


def test_loop_and_file_must_go_together(capsys):
    with pytest.raises(UsageError, match="give it with --repro FILE"):
        RunSpec("repro", "reuse_model").validate()
    with pytest.raises(UsageError, match="measured as loop repro, not sweep"):
        RunSpec("sweep", "reuse_model", repro=FIT_LOOP).validate()
    assert call(["run", "--strategy", "reuse_model"])[0] == 2
    assert "Give --loop NAME" in capsys.readouterr().err


def test_all_loops_leave_out_the_repro():
    from kerasbench.selection import pairs_for

    assert not any(loop == "repro" for loop, _ in pairs_for("all", "all"))


@pytest.mark.tf
def test_a_repro_that_raises_names_the_file_line_and_exception(tmp_path, capsys):
    path = tmp_path / "raises.py"
    path.write_text("import numpy as np\n\n\ndef iteration(ctx, model):\n    return np.ones(3) / undefined_name\n")
    code, out = call(["run", "--repro", str(path), "--strategy", "reuse_model", "--iterations", "2", "--warmup", "0"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2
    assert err == f"kerasbench: error: Repro file {path} failed in the worker at line 5: " \
                  "NameError: name 'undefined_name' is not defined"


@pytest.mark.tf
@pytest.mark.parametrize("strategy", ["rebuild_no_clear", "clear_session_del_gc", "reuse_model", "process_isolation"])
def test_the_fit_loop_example_runs_under_each_strategy(strategy):
    record = measure(RunSpec("repro", strategy, iterations=3, warmup=1, repro=FIT_LOOP))
    assert record["status"] == "ok", record["reason"]
    s = record["summary"]
    assert s["peak_loop"] > 0 and s["growth_per_iter"] is not None
    assert s["train_traces"] is None and s["models_built"] is None  # a user's model has no trace counter: n/a
    assert record["environment"]["tensorflow"]
    assert record["spec"]["repro"] == FIT_LOOP
