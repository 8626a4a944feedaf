"""The metric registry: every reader takes its metrics from it, so one entry is all a new metric needs."""

import dataclasses
import json
import pathlib

import pytest

from kerasbench import METRICS, compare, loading, metrics, record, report, summary, triage
from kerasbench.runtable import run_table
from kerasbench.runner import RunSpec
from kerasbench.units import MIB
from kerasbench.rule import spec_floors

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = [ROOT / "tests" / "fixtures" / "compare" / name for name in ("tf212.json", "tf221.json")]


def test_every_metric_says_where_its_value_comes_from():
    for m in METRICS.values():
        assert m.unit and m.description, m.name
        # per-repeat values, or a part of the RSS or the heap growth fit
        assert (m.per_repeat is None) == bool(m.rss_fit or m.heap_fit), m.name
        assert not (m.rss_fit and m.heap_fit), m.name
        assert m.rss_fit in ("", "slope", "low", "high") and m.heap_fit in ("", "slope", "low", "high"), m.name
        if m.headline:
            assert m.compare is not None and m.text is not None, m.name
        assert not m.tracked_loops or m.tracked, m.name


def test_headline_metrics_keep_compares_order():
    assert metrics.headline_metrics() == ["growth_per_iter", "peak_over_baseline", "peak_over_setup", "retained",
                                          "train_path_traces", "predict_path_traces", "all_traces",
                                          "seconds_per_iter", "objects_per_iter", "heap_growth_per_iter"]
    # triage and attribute bisect on any metric compare judges: the headline ones first, then the loop's peak
    assert metrics.judged_metrics()[:len(metrics.headline_metrics())] == metrics.headline_metrics()
    assert {"peak_loop", "first_iteration_peak", "train_traces"} <= set(metrics.judged_metrics())
    ranks = sorted(m.headline for m in METRICS.values() if m.headline)
    assert ranks == list(range(1, len(ranks) + 1))


def test_asv_tracks_the_metrics_the_registry_marks(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks import _common, control, tf1_graph

    assert _common.TRACKED == ("growth_per_iter", "growth_ci_low", "peak_loop", "peak_over_baseline",
                               "peak_over_setup", "retained", "heap_growth_per_iter", "all_traces", "train_traces",
                               "predict_traces", "objects_per_iter", "gpu_alloc_peak", "gpu_reserved_peak",
                               "seconds_per_iter")
    tracks = {name for name in dir(tf1_graph.Tf1Graph) if name.startswith("track_")}
    here = {m for m in _common.TRACKED if _common.tracked_here(METRICS[m])}  # the GPU ones on device gpu only
    gpu_only = {"gpu_alloc_peak", "gpu_reserved_peak"}
    assert here == set(_common.TRACKED) - (gpu_only if _common.DEVICE == "cpu" else set())
    assert tracks == {f"track_{m}" for m in here} | {"track_graph_ops"}
    assert "track_graph_ops" not in dir(control.Control)


def test_compare_and_the_runner_derive_alike():
    [base] = [r for r in json.loads(FIXTURES[0].read_text())["records"] if r["strategy"] == "clear_session_del_gc"]
    results = [rep["result"] for rep in base["repeats"]]
    n = base["spec"]["iterations"]
    for name in ("retained", "objects_per_iter", "peak_loop"):
        assert compare.cell_side(base, name)["per_repeat"] == [METRICS[name].per_repeat(r, n) for r in results]
        spec = RunSpec(**base["spec"])
        assert summary.summarize(base["repeats"], spec, spec_floors(spec))[name] == base["summary"][name]


# ---------------------------------------------------------------- a new metric: one entry


def _final_rss():
    return metrics.Metric(
        "final_rss", "bytes", "RSS after the loop and a full cleanup",
        lambda result, iterations: result["final_rss"],  # a value the worker already reports
        text=lambda v: f"{v / MIB:.1f} MiB",
        compare=metrics.Magnitude(metrics.MIN_RSS, lambda v: f"{v / MIB:+.1f} MiB", series_noise=True),
        headline=8, tracked=True,
        report=metrics.ReportView("Final RSS", "MiB", MIB),
        column=metrics.RunColumn("final MiB", lambda s: f"{s['final_rss'] / MIB:.1f}"),
    )


def _resummarized(path, tmp_path):
    """A fixture file whose summaries are derived again, as a run with the new entry would write them."""
    payload = json.loads(path.read_text())
    for r in payload["records"]:
        spec = RunSpec(**r["spec"])
        r["summary"] = summary.summarize(r["repeats"], spec, spec_floors(spec))
    out = tmp_path / path.name
    out.write_text(json.dumps(payload))
    return str(out), payload


def test_one_registry_entry_is_all_a_new_metric_needs(monkeypatch, tmp_path):
    monkeypatch.setitem(METRICS, "final_rss", _final_rss())
    (old, old_payload), (new, new_payload) = (_resummarized(p, tmp_path) for p in FIXTURES)

    # the summary, and the record schema that documents it
    [rec] = [r for r in new_payload["records"] if r["strategy"] == "clear_session_del_gc"]
    assert rec["summary"]["final_rss"] == rec["repeats"][0]["result"]["final_rss"]
    assert "final_rss" in record.json_schema()["$defs"]["Summary"]["properties"]

    # compare's cells (a headline metric: in the default set) and triage's choices
    cells = compare.compare(compare.group(loading.load_records([old, new])))
    [cell] = [c for c in cells if (c["metric"], c["strategy"]) == ("final_rss", "clear_session_del_gc")]
    assert cell["unit"] == "bytes" and cell["value"] == rec["summary"]["final_rss"] and cell["verdict"] != "n/a"
    assert "final_rss" in compare.render_table(cells, "")
    assert triage.check_metric("final_rss") == "final_rss"

    # the run table
    table = run_table([rec])  # the figures' tables follow the verdicts', each led by loop and strategy
    assert any(line.startswith("loop ") and "final MiB" in line for line in table.splitlines())
    assert f"{rec['summary']['final_rss'] / MIB:.1f}" in table

    # the report: a heat-table judged against the baseline
    _, root = _report(tmp_path, [old, new])
    assert 'data-metric="final_rss"' in root and "Final RSS (MiB)" in root

    # asv: a track_ method with the metric's unit on every loop shape's class
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks._common import _LoopBenchmark

    class Sweep(_LoopBenchmark, loop="sweep"):
        pass

    cached = {"clear_session_del_gc": {"status": "ok", "reason": None, "summary": rec["summary"]}}
    assert Sweep.track_final_rss.unit == "bytes"
    assert Sweep().track_final_rss(cached, "clear_session_del_gc") == rec["summary"]["final_rss"]


def _report(tmp_path, paths):
    path = tmp_path / "report.html"
    report.write(paths, str(path))
    return path, path.read_text()


def test_a_metric_without_a_compare_rule_is_shown_but_not_judged(monkeypatch):
    monkeypatch.setitem(METRICS, "final_rss", dataclasses.replace(_final_rss(), compare=None, headline=0))
    assert "final_rss" not in metrics.headline_metrics()
    with pytest.raises(ValueError):
        compare.judge("final_rss", {"value": 1.0}, {"value": 2.0})
    assert report.shown([])[-1].name == "final_rss"


def test_a_record_without_its_seconds_reads_the_metric_missing_not_a_traceback(tmp_path, capsys):
    """A record from elsewhere without series.seconds (or without loop_seconds too): compare and score run."""
    from kerasbench.cli import main

    fixtures = pathlib.Path(__file__).resolve().parent / "fixtures" / "compare"
    data = json.loads((fixtures / "tf221.json").read_text())
    for r in data["records"]:
        for repeat in r.get("repeats") or ():
            if repeat.get("result"):
                repeat["result"]["series"].pop("seconds", None)
                repeat["result"].pop("loop_seconds", None)
    edited = tmp_path / "tf221.json"
    edited.write_text(json.dumps(data))
    result = data["records"][0]["repeats"][0]["result"]
    assert metrics._seconds_per_iter(result, 10) is None
    assert main(["compare", str(fixtures / "tf212.json"), str(edited)]) == 0
    assert main(["score", str(edited), "--reference", str(fixtures / "tf221.json")]) == 0
    assert "Traceback" not in capsys.readouterr().err
