"""`kerasbench overhead`: the analysis on synthetic timings, and one fast run end to end."""

import io
import json

import pytest

from kerasbench import overhead
from kerasbench.cli import main


def call(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def outcome(start=0.5, setup=0.1, warmup=0.2, bodies=(0.1, 0.1, 0.1), loop=0.4, protocol=0.25, exit=0.05):
    """A worker outcome whose parts are known: its worker_seconds is their sum."""
    entered = 1000.0
    done = entered + setup + warmup + loop + protocol
    return {
        "status": "ok",
        "start_seconds": start,
        "exit_seconds": exit,
        "worker_seconds": start + (done - entered) + exit,
        "result": {"loop_seconds": loop, "series": {"seconds": list(bodies)},
                   "timing": {"entered": entered, "setup_seconds": setup, "warmup_seconds": warmup, "done": done}},
    }


def test_breakdown_splits_the_wall_time_into_parts_that_add_up():
    outcomes = [outcome(), outcome(start=0.7, bodies=(), loop=0.3)]  # the second ran with probes off
    wall = sum(o["worker_seconds"] for o in outcomes) + 0.4
    parts = overhead.breakdown(outcomes, wall)
    assert set(parts) == set(overhead.PARTS)
    assert sum(parts.values()) == pytest.approx(wall)
    assert parts["start"] == pytest.approx(1.2)
    # warm-up + iteration bodies (all of the loop when off)
    assert parts["work"] == pytest.approx(0.2 + 0.3 + 0.2 + 0.3)
    assert parts["probes"] == pytest.approx(0.1)  # only the run with probes: its loop minus its bodies
    assert parts["protocol"] == pytest.approx(0.5) and parts["exit"] == pytest.approx(0.1)
    assert parts["runner"] == pytest.approx(0.4)


def test_suite_summary_ratios():
    record = {"loop": "control", "strategy": "control_noop",
              "repeats": [outcome(), {"status": "failed", "result": None}]}
    worker = outcome()["worker_seconds"]
    s = overhead.suite_summary([record], wall=2 * worker)
    assert s["workers"] == 1 and s["pairs"] == ["control × control_noop"]
    assert s["bare_work"] == pytest.approx(0.5)
    assert s["wall_over_worker"] == pytest.approx(2.0)
    assert s["wall_over_bare"] == pytest.approx(2 * worker / 0.5)
    assert s["worker_over_bare"] == pytest.approx(worker / 0.5)


def test_fit_recovers_fixed_per_strategy_and_per_iteration_costs():
    points = [{"strategies": k, "iterations": n, "wall": 0.3 + 0.8 * k + 0.002 * k * n}
              for n in (10, 20, 40) for k in (1, 2, 4)]
    fit = overhead.fit_scaling(points)
    assert fit["fixed"] == pytest.approx(0.3) and fit["per_strategy"] == pytest.approx(0.8)
    assert fit["per_iteration"] == pytest.approx(0.002)
    assert fit["r2"] == pytest.approx(1.0) and fit["max_residual"] < 1e-9 and fit["points"] == 9


def test_fit_of_noisy_timings_keeps_the_worker_cost_and_reports_the_residual():
    noise = [0.05, -0.04, 0.03, -0.05, 0.02, 0.0, -0.01, 0.04, -0.03]
    points = [{"strategies": k, "iterations": n, "wall": 0.8 * k + 0.0002 * k * n + e}
              for (n, k), e in zip([(n, k) for n in (10, 20, 40) for k in (1, 2, 4)], noise)]
    fit = overhead.fit_scaling(points)
    assert fit["per_strategy"] == pytest.approx(0.8, abs=0.05)
    assert 0 < fit["max_residual"] <= 0.1 and fit["r2"] > 0.99


def test_scaling_pairs_cycle_through_the_controls():
    assert [s for _, s in overhead.scaling_pairs(4)] == list(overhead.CONTROLS) + ["control_noop"]


def test_asv_summary_and_results_counts():
    results = {"result_columns": ["result", "params", "version"],
               "results": {"control.Control.track_a": [[1, 2, 3], [["'x'", "'y'", "'z'"]], "v"],
                           "control.Control.track_b": [[1, 2, 3], [["'x'", "'y'", "'z'"]], "v"],
                           "plain.time_c": [[1], [], "v"]},
               "durations": {"<build>": 5.0, "<setup_cache control:12>": 4.0}}
    setup, processes = overhead.results_counts(results)
    assert setup == 4.0 and processes == 7
    a = overhead.asv_summary(wall=18.0, setup_cache=4.0, worker_seconds=3.0, processes=7)
    assert a["wall_over_worker"] == pytest.approx(6.0) and a["per_process"] == pytest.approx(2.0)


def test_overhead_end_to_end_prints_ratios_and_writes_json(tmp_path, capsys):
    path = tmp_path / "harness.json"
    code, text = call(["overhead", "--runs", "1", "--iterations", "5", "--scale-iterations", "3,4",
                       "--scale-strategies", "1,2", "--json", str(path)])
    assert code == 0
    for needle in ("rss_bytes", "live_objects", "on/off", "wall / bare work", "interpreter start + imports",
                   "per pair-iteration", "control_leak_native"):
        assert needle in text
    report = json.loads(path.read_text())
    assert report["suite"]["workers"] == 3
    assert sum(report["suite"]["parts"].values()) == pytest.approx(report["suite"]["wall"])
    assert report["suite"]["wall"] >= report["suite"]["worker_seconds"] > report["suite"]["bare_work"] > 0
    assert len(report["scaling"]["points"]) == 4 and report["scaling"]["fit"]["points"] == 4
    assert "tf_suite" not in report and "asv" not in report
    assert [p.name for p in tmp_path.iterdir()] == ["harness.json"]  # written atomically: no temp file left
    err = capsys.readouterr().err
    assert "overhead: scaling run 1/1 [4/4]" in err  # progress on stderr


@pytest.mark.parametrize("argv", [["overhead", "--runs", "0"], ["overhead", "--iterations", "1"],
                                  ["overhead", "--scale-iterations", "2"], ["overhead", "--scale-strategies", "x"]])
def test_overhead_bad_input_is_one_line_exit_2(argv, capsys):
    assert call(argv)[0] == 2
    err = capsys.readouterr().err
    assert "Invalid value" in err and err.count("\n") == 1


def test_overhead_tf_is_the_old_spelling_of_tf_pair(capsys):
    """`--tf-pair` (a switch) was `--tf`, which every other command gives a TF release: it still works, saying so."""
    from kerasbench.cli import build_parser

    assert build_parser().parse_args(["overhead", "--tf-pair"]).tf_pair is True
    assert capsys.readouterr().err == ""
    assert build_parser().parse_args(["overhead", "--tf"]).tf_pair is True
    err = capsys.readouterr().err
    assert "--tf is now --tf-pair" in err and err.count("\n") == 1
    assert build_parser().parse_args(["overhead"]).tf_pair is False


def test_limit_is_setup_and_bare_work_over_the_cores():
    """Two workers of known parts on 2 cores: limit = Σ (setup + warm-up + bodies) / 2; the rest is accounted for."""
    records = [{"loop": "control", "strategy": s, "spec": {"jobs": 2}, "repeats": [outcome(setup=setup)]}
               for s, setup in (("control_noop", 1.0), ("control_leak_native", 3.0))]
    worker = sum(r["repeats"][0]["worker_seconds"] for r in records)
    s = overhead.limit_summary(records, wall=5.0, cores=2)
    needed = (1.0 + 0.2 + 0.3) + (3.0 + 0.2 + 0.3)
    assert s["setup_and_work"] == pytest.approx(needed) and s["limit"] == pytest.approx(needed / 2)
    assert s["wall_over_limit"] == pytest.approx(5.0 / (needed / 2))
    assert s["worker_over_needed"] == pytest.approx(worker / needed)
    assert sum(s["parts"].values()) + s["outside_workers"] == pytest.approx(5.0 * 2)  # core-seconds add up
    assert s["jobs"] == [2]


def test_overhead_records_reads_a_finished_run(tmp_path):
    records = [{"loop": "control", "strategy": "control_noop", "spec": {"jobs": 1}, "repeats": [outcome(setup=2.0)]}]
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"schema": 1, "records": records}))
    code, text = call(["overhead", "--records", str(path), "--wall", "10", "--cores", "2"])
    assert code == 0
    assert "limit 1 s" in text and "wall / limit 8.00×" in text and "outside the workers" in text
    assert call(["overhead", "--records", str(tmp_path / "none")])[0] == 2
