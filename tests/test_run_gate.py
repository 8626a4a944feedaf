"""`kerasbench run --fail-on`: the CI gate of a run, as compare's (options.fail_on declares both)."""

import io
import json

import pytest

from kerasbench.cli import main
from kerasbench.session import GATE_EXIT, RUN_GATES, gated

RUN = ["run", "--loop", "control", "--iterations", "12", "--warmup", "1", "--no-calibrate"]


def call(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def test_a_growing_pair_fails_the_gate_with_its_own_exit_code(tmp_path, capsys):
    """Before: `run` with a grows row exited 0; a CI job had to run `compare --fail-on` over its records."""
    path = tmp_path / "out.json"
    code, text = call(RUN + ["--strategy", "control_leak_native,control_noop", "--fail-on", "grows",
                             "--json", str(path)])
    records = json.loads(path.read_text())["records"]
    growing = [r["strategy"] for r in records if r["summary"]["verdict"] == "grows"]
    err = capsys.readouterr().err
    assert growing == ["control_leak_native"], [r["summary"] for r in records]
    assert code == GATE_EXIT and GATE_EXIT not in (0, 1, 2)
    assert "verdict" in text  # the table first, as without the gate
    gate = err[err.index("(--fail-on):"):].splitlines()
    assert err.count("pair(s) are grows (--fail-on)") == 1 and len(gate) == 2, err
    assert gate[1].startswith("  control × control_leak_native: grows (RSS grows, heap grows; leak), RSS +"), gate
    assert gated(records, ("leak",)) == gated(records, ("grows",)) and gated(records, ("retention",)) == []


def test_a_flat_run_passes_the_gate(capsys):
    code, _ = call(RUN + ["--strategy", "control_noop", "--fail-on", "grows,leak"])
    assert code == 0 and "--fail-on" not in capsys.readouterr().err


@pytest.mark.parametrize("value", ["grws", "regressed", ""])
def test_fail_on_names_only_a_run_s_verdicts(value, capsys):
    assert call(RUN + ["--fail-on", value])[0] == 2
    err = capsys.readouterr().err
    assert err.startswith("kerasbench: error: Unknown fail-on.") and err.count("\n") == 1, err
    assert f"Expected one of: {', '.join(sorted(RUN_GATES))}." in err and "Traceback" not in err


def test_run_and_compare_declare_fail_on_alike(capsys):
    for command in ("run", "compare"):
        assert main([command, "--help"], out=io.StringIO()) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--fail-on VERDICTS exit 3, listing the pairs, when any pair has one of these verdicts: a comma list " \
           "of grows, inconclusive, leak, retention" in text
    assert "--fail-on VERDICTS exit 1, listing the cells, when any cell has one of these verdicts" in text
