"""tools/inject_changes.py: the atlas' marks scored on known changes injected into measured series (known answers on
synthetic records; the measured figures are docs/atlas/README.md's)."""

import importlib.util
import json
import pathlib

import numpy as np
import pytest

from kerasbench.units import KIB, MIB

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("inject_changes", ROOT / "tools" / "inject_changes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def flat_record(strategy: str, seed: int, n: int = 60, repeats: int = 1):
    """A measured-looking record of a pair that does not grow: RSS in pages around a level, the heap quiet."""
    from kerasbench import summary
    from kerasbench.rule.floors import spec_floors
    from kerasbench.spec import RunSpec

    rng = np.random.default_rng(seed)
    reps = []
    for r in range(repeats):
        rss = [int(500 * MIB + 4096 * round(rng.normal(0, 8))) for _ in range(n)]
        heap = [int(80 * MIB + rng.normal(0, 64)) for _ in range(n)]
        series = {"rss": rss, "heap": heap, "seconds": [0.1] * n, "train_traces": [0] * n,
                  "predict_traces": [0] * n, "function_traces": [0] * n}
        result = {"iterations_done": n, "series": series, "baseline_rss": rss[0], "final_rss": rss[-1],
                  "peak_loop_rss": max(rss), "peak_method": "vmhwm", "loop_seconds": 0.1 * n,
                  "objects_before": 0, "objects_after": 0, "train_traces": 0, "predict_traces": 0,
                  "function_traces": 0, "models_built": 1, "graph_build_seconds": None, "tf_alloc_peak": None,
                  "child_peaks": [], "py_blocks_before": 1000, "py_blocks_after": 1000, "heap_baseline": heap[0],
                  "heap_final": heap[-1], "heap_peak": max(heap), "heap_source": "fake", "heap_unavailable": None}
        reps.append({"repeat": r, "status": "ok", "reason": None, "result": result, "environment": None})
    spec = RunSpec("inference", strategy, iterations=n, warmup=3, repeats=repeats)
    return summary.make_record(spec, reps, spec_floors(spec))


def test_a_leak_is_added_to_every_reading_and_judged_again(tool):
    record = flat_record("reuse_model", 1)
    leaking = tool.inject(record, tool.leak(64 * KIB))
    before, after = record["repeats"][0]["result"]["series"], leaking["repeats"][0]["result"]["series"]
    assert [b - a for a, b in zip(before["rss"], after["rss"])] == [64 * KIB * i for i in range(60)]
    assert leaking["summary"]["growth_per_iter"] == pytest.approx(64 * KIB, abs=2 * KIB)
    assert record["summary"]["growth_per_iter"] == pytest.approx(0, abs=2 * KIB)  # the original left as it was
    assert tool.step(16 * MIB)(29, 60) == 0 and tool.step(16 * MIB)(30, 60) == 16 * MIB
    assert tool.ramp(64 * KIB, 5)(200, 400) == pytest.approx(64 * KIB / (1 - np.exp(-1 / 5)), rel=1e-6)


def test_identical_software_is_not_marked_and_a_large_leak_always_is(tool):
    strategies = ("reuse_model", "clear_session", "clear_session_del_gc", "gc_collect_only")
    first = {("inference", s): flat_record(s, 10 + i) for i, s in enumerate(strategies)}
    second = {("inference", s): flat_record(s, 20 + i) for i, s in enumerate(strategies)}
    result = tool.evaluate(first, second)
    rows = {row["kind"]: row for row in result["rows"]}
    assert rows["as measured (no change)"]["marked"] == 0 and result["false_share"] == 0
    assert result["by_first_verdict"] == {"flat": 4, "grows": 0}
    assert rows["leak 64 KiB/it"]["recall"]["flat"] == 1.0 and rows["leak 64 KiB/it"]["precision"]["flat"] == 1.0
    assert rows["leak 64 KiB/it"]["recall"]["grows"] is None  # no growing pair: no share, not 0
    assert rows["leak 1 KiB/it"]["marked"] <= rows["leak 64 KiB/it"]["marked"]
    assert "precision" in tool.table(result)


def test_files_that_share_no_pair_are_one_line_and_exit_2(tool, tmp_path, capsys):
    from kerasbench.record import records_payload

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    records = [flat_record("reuse_model", 1), flat_record("clear_session", 2)]
    for record in records:
        record["environment"] = {"tensorflow": "2.21.0", "keras": "3.13.2", "python": "3.11.2"}
    a.write_text(json.dumps(records_payload(records[:1])))
    b.write_text(json.dumps(records_payload(records[1:])))
    assert tool.main([str(a), str(b)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "share no pair" in err[0]


def _documented_rows() -> dict:
    """The atlas README's change-detector table: {first cell: (marked, recall on flat pairs or None)}."""
    text = (ROOT / "docs" / "atlas" / "README.md").read_text()
    section = text.split("## How far to trust a mark", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip().strip("*").strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[2].replace(",", "").isdigit():
            rows[cells[0]] = (int(cells[2]), cells[3].replace(" %", "%") or None)
    return rows


def test_the_documented_replay_is_what_the_kept_records_replay_to(tool):
    """The README's figures come from docs/atlas/replay/: replayed here for the rows a reader leans on most."""
    replay = ROOT / "docs" / "atlas" / "replay"
    result = tool.evaluate(tool.pairs_of(str(replay / "tf-2.21.0-a.json.gz")),
                           tool.pairs_of(str(replay / "tf-2.21.0-b.json.gz")), kinds_of=["leak 16 KiB/it"])
    documented = _documented_rows()
    none, leak = result["rows"]
    assert documented["none (b as measured)"][0] == none["marked"]
    assert documented["leak 16 KiB/iteration"] == (leak["marked"], f"{leak['recall']['flat']:.0%}")
    assert result["pairs"] == 58  # every CPU pair of the column, ok in both measurements
