"""The Quick start's main command ends with the verdicts: `kerasbench publish` after `asv run` says per loop which
strategies grow (slope and interval in KiB/iteration, what grew) and which stay flat, then how to open the report and
the dashboard; under asv each pair's outcome reaches the terminal (asv hides the benchmark's stderr)."""

import copy
import io
import json
import os
import pathlib

from kerasbench import console, runtable
from kerasbench.commands import publish
from kerasbench.units import KIB

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures" / "compare"


def _records():
    records = json.loads((FIXTURES / "tf221.json").read_text())["records"]
    grows = copy.deepcopy(records[0])
    grows["strategy"] = "keep_outputs"
    grows["summary"].update(verdict="grows", heap_verdict="grows", growth_kind="leak", growth_per_iter=22 * KIB,
                            growth_ci_low=9 * KIB, growth_ci_high=30.5 * KIB)
    flat = copy.deepcopy(records[1])
    flat["summary"].update(verdict="flat", heap_verdict="flat")
    flat2 = copy.deepcopy(flat)
    flat2["strategy"] = "reuse_model"
    skipped = copy.deepcopy(records[1])
    skipped.update(strategy="jax_clear_caches", status="skipped",
                   reason="strategy jax_clear_caches runs on the jax backend only (here: tensorflow)")
    skipped2 = copy.deepcopy(skipped)
    skipped2.update(strategy="jax_other", reason="strategy jax_other runs on the jax backend only (here: tensorflow)")
    return [grows, records[2], flat, flat2, skipped, skipped2]


def test_growers_first_with_slope_interval_and_what_grew_then_flat_names_then_what_did_not_run():
    lines = runtable.suite_verdicts([(r, "2.21.0") for r in _records()])
    text = "\n".join(lines)
    assert lines[0] == "verdicts: 4 pairs measured: 1 grows, 1 inconclusive, 2 flat; 2 did not run", lines[0]
    row = next(line for line in lines if "keep_outputs" in line)
    assert row.split()[:2] == ["sweep", "keep_outputs"]
    assert row.split()[2:4] == ["grows", "leak"] and row.endswith("+22.0 [+9.0, +30.5]"), row
    rows = [line for line in lines if line.startswith(("sweep ", "inference "))]
    assert "keep_outputs" in rows[0] and "inconclusive" in rows[1], rows  # grows before undecided
    assert "  inference: " in text and "release_outputs" not in text.split("stay flat:")[0].split("\n", 1)[0]
    flat_line = next(line for line in lines if line.startswith("  inference: "))
    assert "reuse_model" in flat_line
    said = " ".join(" ".join(lines[-2:]).split())  # one line, wrapped at the width
    assert said == ("skipped (2): runs on the jax backend only (here: tensorflow): inference × jax_clear_caches, "
                    "inference × jax_other"), lines[-2:]
    assert max(len(line) for line in lines) <= runtable.RUN_WIDTH


def test_several_tf_versions_are_told_apart_and_a_loop_without_tf_is_not_labelled():
    records = _records()[:2]
    control = copy.deepcopy(records[1])
    control["loop"], control["strategy"] = "control", "control_noop"
    lines = runtable.suite_verdicts([(records[0], "2.13.1"), (records[1], "2.21.0"), (control, None)])
    text = "\n".join(lines)
    assert "sweep (TF 2.13.1)" in text and "inference (TF 2.21.0)" in text
    assert "control (TF" not in text


def test_publish_ends_with_the_verdicts_of_the_newest_run_and_how_to_open_report_and_dashboard(tmp_path, monkeypatch):
    from kerasbench.tree import records_root, run_folder, save_records

    folder = run_folder(records_root(str(tmp_path)), "abcdef0123456789", "existing-py_venv")
    save_records(folder, "sweep", {"schema": 1, "profile": "quick", "records": _records()})
    (machines, commit), loaded = publish.newest_records(str(tmp_path))
    assert commit == "abcdef01" and len(loaded) == 6
    assert {tf for _, tf in loaded} == {r["environment"]["tensorflow"] for r in _records()}
    html = tmp_path / ".asv" / "html"
    html.mkdir(parents=True)
    (html / "kerasbench-report.html").write_text("<html></html>")
    monkeypatch.chdir(tmp_path)
    lines = publish.how_to_open(str(html), str(html / "kerasbench-report.html"))
    assert lines[0].startswith("report:    .asv/html/kerasbench-report.html")
    assert lines[1] == "dashboard: asv preview  (then http://127.0.0.1:8080, or the address it prints)"
    assert ".asv/html does not open from file://" in lines[2]
    other = publish.how_to_open(str(html), None, "asv.gpu.json")
    assert other[0].startswith("dashboard: asv preview --config asv.gpu.json")
    assert max(len(line) for line in lines + other) <= runtable.RUN_WIDTH


def test_no_records_tree_is_no_verdicts(tmp_path):
    assert publish.newest_records(str(tmp_path)) == ((None, None), [])


def test_each_pairs_outcome_reaches_the_terminal_a_line_each(monkeypatch):
    """asv keeps setup_cache's stderr for its log: Echo writes each outcome, pairs done and time left to the tty."""
    hidden, tty = io.StringIO(), io.StringIO()
    ticks = iter(range(0, 1000, 30))
    progress = console.Progress(hidden, 2, 1, clock=lambda: next(ticks))
    echo = console.Echo(progress, tty, prefix="  ")
    records = _records()
    for i, r in enumerate(records[:2], 1):
        mine = echo.pair(i, r["loop"], r["strategy"], 10)
        mine({"event": "start", "repeat": 0})
        mine.done(r)
    lines = tty.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("  [1/2] sweep × keep_outputs: grows (RSS grows, heap grows; leak), RSS +22.0")
    assert "(1 of 2 done, " in lines[0] and " left)" in lines[0]
    assert "(2 of 2 done, " in lines[1]
    assert "starting a fresh worker" in hidden.getvalue() and "starting" not in tty.getvalue()


def test_no_terminal_is_no_echo(monkeypatch):
    monkeypatch.setenv("KERASBENCH_QUIET", "1")
    assert console.console_stream() is None
    monkeypatch.delenv("KERASBENCH_QUIET")
    if not os.path.exists("/dev/tty"):
        assert console.console_stream() is None
