"""kerasbench compare: verdicts from series and repeats, output formats, one-line errors on bad input."""

import copy
import csv
import io
import json
import os
import pathlib
import re

import pytest

from kerasbench import compare
from kerasbench.cli import main
from kerasbench.metrics import headline_metrics
from kerasbench.summary import summarize
from kerasbench.loading import load_records
from kerasbench.runner import RunSpec
from kerasbench.rule import spec_floors

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures" / "compare"
TF212, TF221 = str(FIXTURES / "tf212.json"), str(FIXTURES / "tf221.json")  # real 4-iteration smoke runs
KIB, MIB = 1024, 1024**2


def md_rows(text):
    """The cells of each markdown table row of `text`, padding stripped (an escaped `|` stays in its cell)."""
    return [tuple(c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip()[1:-1]))
            for line in text.splitlines() if line.startswith("|")]


def call(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def payload(path=TF221):
    return json.loads(pathlib.Path(path).read_text())


def write(path, data):
    path.write_text(json.dumps(data))
    return str(path)


def as_version(data, version):
    """The same records, relabelled as measured on another TF version."""
    data = copy.deepcopy(data)
    for r in data["records"]:
        r["environment"]["tensorflow"] = version
    return data


def cells_of(paths, baseline=None):
    return compare.compare(compare.group(load_records(paths)), baseline=baseline)


def cell(cells, loop, strategy, metric, version=None):
    [found] = [c for c in cells if (c["loop"], c["strategy"], c["metric"]) == (loop, strategy, metric)
               and (version is None or c["version"] == version)]
    return found


def synthetic(version, slope, repeats=2, n=20, seed=0):
    """A record from the fixture's template with RSS series of a known slope (bytes/iteration)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    data = as_version(payload(), version)
    record = data["records"][0]
    template = record["repeats"][0]
    record["spec"].update(iterations=n, repeats=repeats)
    record["repeats"] = []
    for r in range(repeats):
        rep = copy.deepcopy(template)
        rss = [int(600 * MIB + slope * i + rng.normal(0, 256 * KIB)) for i in range(n)]
        rep["repeat"] = r
        rep["result"]["series"] = {"rss": rss, "seconds": [0.5 + 0.01 * rng.random() for _ in range(n)],
                                   "train_traces": [2] * n, "predict_traces": [0] * n, "function_traces": [0] * n}
        rep["result"].update(baseline_rss=rss[0], peak_loop_rss=max(rss), final_rss=rss[-1])
        record["repeats"].append(rep)
    spec = RunSpec(**record["spec"])
    record["summary"] = summarize(record["repeats"], spec, spec_floors(spec))
    data["records"] = [record]
    return data


# ---------------------------------------------------------------- verdicts


def test_real_regression_and_improvement_between_tf_2_12_and_2_21():
    cells = cells_of([TF212, TF221])
    growth = cell(cells, "sweep", "clear_session_del_gc", "growth_per_iter")
    assert (growth["baseline"], growth["version"], growth["verdict"]) == ("2.12.1", "2.21.0", "regressed")
    assert growth["value"] > 5 * growth["baseline_value"]
    assert growth["ci_low"] > growth["baseline_ci_high"]  # the evidence travels with the verdict
    assert cell(cells, "inference", "clear_session", "growth_per_iter")["verdict"] == "improved"
    # +89.6 MiB of absolute peak is the process being bigger before the loop; the loop's own peak is flat
    peak = cell(cells, "inference", "clear_session", "peak_over_baseline")
    assert peak["verdict"] == "unchanged" and abs(peak["difference"]) < MIB
    assert peak["beside"] == "peak_loop" and peak["beside_value"] - peak["baseline_beside_value"] > 80 * MIB
    assert cell(cells, "inference", "clear_session", "train_path_traces")["verdict"] == "n/a"  # before the hook
    steps = compare.compare(compare.group(load_records([TF212, TF221])), metrics=["train_traces"])
    assert cell(steps, "inference", "clear_session", "train_traces")["verdict"] == "unchanged"
    verdicts = [c["verdict"] for c in cells]
    assert verdicts == sorted(verdicts, key=compare.VERDICTS.index)  # regressions first
    assert {c["metric"] for c in cells} == set(headline_metrics())


def test_known_slope_regression_from_series_and_repeats(tmp_path):
    a = write(tmp_path / "a.json", synthetic("2.15.1", slope=0))
    b = write(tmp_path / "b.json", synthetic("2.16.2", slope=1 * MIB, seed=1))
    growth = cell(cells_of([a, b]), "sweep", "clear_session_del_gc", "growth_per_iter")
    assert growth["verdict"] == "regressed" and "above" in growth["why"]
    back = cell(cells_of([a, b], baseline="2.16.2"), "sweep", "clear_session_del_gc", "growth_per_iter")
    assert back["verdict"] == "improved" and back["version"] == "2.15.1"


def test_noise_alone_is_not_a_regression(tmp_path):
    a = write(tmp_path / "a.json", synthetic("2.15.1", slope=0))
    b = write(tmp_path / "b.json", synthetic("2.16.2", slope=0, seed=7))
    cells = cells_of([a, b])
    assert not [c for c in cells if c["verdict"] in ("regressed", "improved")], cells
    assert cell(cells, "sweep", "clear_session_del_gc", "growth_per_iter")["verdict"] == "unchanged"


def test_equal_inputs_are_unchanged(tmp_path):
    same = write(tmp_path / "same.json", with_load(as_version(payload(), "2.22.0"), 0.4))
    cells = cells_of([write(tmp_path / "base.json", with_load(payload(), 0.4)), same])
    # the fixtures predate the heap probe, the tracing hook and the setup peak: n/a on both sides, the rest unchanged
    assert {c["metric"] for c in cells if c["verdict"] == "n/a"} <= {"heap_growth_per_iter", "peak_over_setup",
                                                                      "train_path_traces", "predict_path_traces",
                                                                      "all_traces"}
    assert cells and {c["verdict"] for c in cells if c["verdict"] != "n/a"} == {"unchanged"}
    assert {c["ratio"] for c in cells if c["ratio"] is not None} == {1.0}


def test_any_trace_count_change_is_found(tmp_path):
    data = as_version(payload(), "2.22.0")
    [record] = [r for r in data["records"] if (r["loop"], r["strategy"]) == ("inference", "clear_session")]
    record["repeats"][0]["result"]["predict_traces"] += 1
    record["summary"]["predict_traces"] += 1
    groups = compare.group(load_records([TF221, write(tmp_path / "more.json", data)]))
    cells = compare.compare(groups, metrics=["growth_per_iter", "train_traces", "predict_traces"])
    traces = cell(cells, "inference", "clear_session", "predict_traces")
    assert traces["verdict"] == "regressed" and "5 -> 6" in traces["why"]
    assert cells[0] is traces  # the only regression, first
    assert cell(cells, "inference", "clear_session", "train_traces")["verdict"] == "unchanged"


def _traced(version, n, per_iteration, setup=1, series=True, warmup=2):
    """The fixture's inference × clear_session relabelled: n measured iterations after `warmup`, its prediction
    path tracing `per_iteration` times an iteration after `setup` traces (cumulative series, or none)."""
    data = as_version(payload(), version)
    [record] = [r for r in data["records"] if (r["loop"], r["strategy"]) == ("inference", "clear_session")]
    data["records"] = [record]
    record["spec"]["warmup"] = warmup
    result = record["repeats"][0]["result"]
    counts = [setup + per_iteration * (warmup + k + 1) for k in range(n)]
    result["iterations_done"] = n
    result["series"] = {"rss": [600 * MIB] * n} | ({"predict_path_traces": counts} if series else {})
    result["predict_path_traces"] = record["summary"]["predict_path_traces"] = counts[-1]
    return data


@pytest.mark.parametrize("base, new, verdict, why", [
    ((70, 1), (29, 1), "unchanged", "1.00 traces per iteration in both (73 over 72 and 32 over 31 iterations)"),
    ((70, 1), (29, 2), "regressed", "1.00 -> 2.00 traces per iteration"),
    ((70, 3), (29, 2), "improved", "3.00 -> 2.00 traces per iteration"),
    ((70, 0), (29, 0), "unchanged", "1 traces in both"),  # a constant: the same whatever the length
])
def test_a_count_of_runs_of_different_lengths_is_compared_per_iteration(tmp_path, base, new, verdict, why):
    """A budgeted run stops when it is decided: a wrapper that retraces every call counts 73 over one run and 32
    over another; the totals say regressed or improved, the count per iteration says what happened."""
    paths = [write(tmp_path / "a.json", _traced("2.21.0", *base)), write(tmp_path / "b.json", _traced("2.22.0", *new))]
    found = cell(compare.compare(compare.group(load_records(paths)), metrics=["predict_path_traces"]),
                 "inference", "clear_session", "predict_path_traces")
    assert (found["verdict"], why in found["why"]) == (verdict, True), found["why"]


def test_one_growth_whose_heap_was_judged_otherwise_is_unchanged(tmp_path):
    """+3646 KiB/iteration "grows (settling)" against +3649 "grows (leak)" (a TF nightly triage's two sides): the
    growth is the same; what grew beside it is shown, not judged, in this cell (heap_growth_per_iter judges it)."""
    base = compare.cell_side(synthetic("2.21.0", 3646 * KIB)["records"][0], "growth_per_iter")
    new = dict(base, value=base["value"] + 3 * KIB, verdict="grows (what grew: leak)", kind="leak")
    base = dict(base, verdict="grows (what grew: settling)", kind="settling")
    verdict, why = compare.judge("growth_per_iter", base, new)
    assert base["bare"] == "grows" and verdict == "unchanged", why
    # each side's own: "both flat (leak)" said of flat/flat against grows/leak read as if both had leaked
    assert why.startswith("RSS grows in both; what grew: settling → leak, slopes within the margin"), why
    _, why = compare.judge("growth_per_iter", dict(base, kind="leak"), new)
    assert why.startswith("RSS grows in both; what grew: leak, slopes"), why


def test_a_calibrated_floor_is_said_to_a_tenth():
    """A calibration's floor, 54.6803 KiB/iteration, was said with six digits ("within the floor (54.6803 KiB/iter)")
    in an answer beside one of 32: to a tenth, as the slopes beside it are (protocol 9: the margin is said)."""
    side = compare.cell_side(synthetic("2.21.0", 10 * KIB)["records"][0], "growth_per_iter")
    side = dict(side, margin=54.6803 * KIB)
    _, why = compare.judge("growth_per_iter", side, dict(side, value=side["value"] + KIB))
    assert why.endswith("slopes within the margin (54.7 KiB/iter)"), why
    _, why = compare.judge("growth_per_iter", dict(side, margin=32 * KIB), dict(side, margin=32 * KIB))
    assert why.endswith("slopes within the margin (32 KiB/iter)"), why  # a whole number stays whole


def test_a_count_without_its_series_over_runs_of_different_lengths_is_inconclusive(tmp_path):
    paths = [write(tmp_path / "a.json", _traced("2.21.0", 70, 1, series=False)),
             write(tmp_path / "b.json", _traced("2.22.0", 29, 1, series=False))]
    found = cell(compare.compare(compare.group(load_records(paths)), metrics=["predict_path_traces"]),
                 "inference", "clear_session", "predict_path_traces")
    assert found["verdict"] == "inconclusive" and "keeps no per-iteration count" in found["why"]


def with_load(data, start, end=None, jobs=None):
    """Every worker of `data` as if it saw these 1-minute loads (the whole machine's, 2 CPUs) at its start and end."""
    for r in data["records"]:
        if jobs is not None:
            r["spec"]["jobs"] = jobs
        for env in [r["environment"]] + [rep["environment"] for rep in r["repeats"] if rep["environment"]]:
            env.update(load_start=[start, start, start], load_end=[end or start] * 3)
    return data


def test_timing_within_the_noise_band_is_unchanged(tmp_path):
    data = with_load(as_version(payload(), "2.22.0"), 0.5)
    for r in data["records"]:
        r["summary"]["seconds_per_iter"] *= 1.3
        for rep in r["repeats"]:
            rep["result"]["series"]["seconds"] = [s * 1.3 for s in rep["result"]["series"]["seconds"]]
    quiet = write(tmp_path / "quiet.json", with_load(payload(), 0.4))
    cells = cells_of([quiet, write(tmp_path / "slower.json", data)])
    assert {c["verdict"] for c in cells if c["metric"] == "seconds_per_iter"} == {"unchanged"}


# ---------------------------------------------------------------- fair comparisons (issue 12)


def test_fixture_timings_of_one_repeat_without_a_load_are_not_comparable():
    cells = [c for c in cells_of([TF212, TF221]) if c["metric"] == "seconds_per_iter"]
    assert cells and {c["verdict"] for c in cells} == {"not comparable"}
    assert all("one repeat" in c["why"] and "load not recorded" in c["why"] for c in cells)


@pytest.mark.parametrize("base_load, new_load, jobs, verdict, why", [
    (0.4, 0.6, None, "regressed", "separated"),  # quiet and alike: judged (2 CPUs: 0.2 vs 0.3 per CPU)
    (0.4, 3.0, None, "not comparable", "loads differ: 0.20 vs 1.50 per CPU"),
    (2.4, 2.6, None, "not comparable", "one repeat of the baseline run on a loaded machine (1.20 per CPU)"),
    (0.4, 0.4, 2, "not comparable", "jobs 2"),
])
def test_time_verdicts_only_where_conditions_make_them_meaningful(tmp_path, base_load, new_load, jobs, verdict, why):
    base = with_load(payload(), base_load, jobs=jobs)
    slow = with_load(as_version(payload(), "2.22.0"), new_load)
    for r in slow["records"]:
        r["summary"]["seconds_per_iter"] *= 3
        for rep in r["repeats"]:
            rep["result"]["series"]["seconds"] = [s * 3 for s in rep["result"]["series"]["seconds"]]
    c = cell(cells_of([write(tmp_path / "a.json", base), write(tmp_path / "b.json", slow)]),
             "inference", "clear_session", "seconds_per_iter")
    assert c["verdict"] == verdict and why in c["why"], c["why"]


def test_one_repeat_of_a_smooth_series_has_no_zero_noise(tmp_path):
    """The fixture's 4 smooth iterations measured a noise of 0.0 MiB: any 16 MiB difference passed."""
    data = as_version(payload(), "2.22.0")
    [record] = [r for r in data["records"] if (r["loop"], r["strategy"]) == ("inference", "clear_session")]
    result = record["repeats"][0]["result"]
    result["peak_loop_rss"] += 40 * MIB  # the loop's own peak 40 MiB higher, one repeat of 4 iterations
    record["summary"]["peak_over_baseline"] += 40 * MIB
    c = cell(cells_of([TF221, write(tmp_path / "peak.json", data)]), "inference", "clear_session",
             "peak_over_baseline")
    assert c["verdict"] == "inconclusive" and c["noise"] is None
    assert "noise unknown: one repeat of fewer than 8 iterations" in c["why"]
    assert compare.residual_noise([float(v) for v in range(20)]) == 0.0  # a perfect line: measured 0 ...
    assert compare.judge("peak_over_baseline", {"value": 0.0, "repeats": 1, "noise": 0.0},
                         {"value": 40.0 * MIB, "repeats": 1, "noise": 0.0})[0] == "inconclusive"  # ... refused


def test_series_noise_is_the_scatter_around_the_line(tmp_path):
    import numpy as np

    rng = np.random.default_rng(3)
    y = 1000.0 * np.arange(200) + rng.normal(0, 5000.0, 200)
    assert compare.residual_noise(list(y)) == pytest.approx(5000.0, rel=0.15)  # sd 5000 around a slope of 1000
    assert np.isnan(compare.residual_noise(list(y[:7])))  # too short to say


@pytest.mark.parametrize("extra, verdict", [(40 * MIB, "regressed"), (1 * MIB, "unchanged")])
def test_peak_verdict_is_on_the_loops_own_peak(tmp_path, extra, verdict):
    """A release whose process is 200 MiB bigger before the loop, with a loop peak `extra` higher over it."""
    a = synthetic("2.15.1", slope=0, n=20)
    b = synthetic("2.16.2", slope=0, n=20, seed=1)
    for rep in b["records"][0]["repeats"]:
        result = rep["result"]
        result["series"]["rss"] = [v + 200 * MIB for v in result["series"]["rss"]]
        result["baseline_rss"] += 200 * MIB
        result["peak_loop_rss"] += 200 * MIB + extra
    spec = RunSpec(**b["records"][0]["spec"])
    b["records"][0]["summary"] = summarize(b["records"][0]["repeats"], spec, spec_floors(spec))
    c = cell(cells_of([write(tmp_path / "a.json", a), write(tmp_path / "b.json", b)]), "sweep",
             "clear_session_del_gc", "peak_over_baseline")
    assert c["verdict"] == verdict, c["why"]
    assert c["difference"] == pytest.approx(extra, abs=2 * MIB) and c["noise"] > 0
    assert c["beside_value"] - c["baseline_beside_value"] == pytest.approx(200 * MIB + extra, abs=2 * MIB)


def test_no_ratio_against_a_baseline_of_the_other_sign(tmp_path):
    """retained -41 KiB on the baseline, +15 MiB now: printed as -370.49x before; now the difference."""
    base = payload(TF212)
    [record] = [r for r in base["records"] if r["strategy"] == "clear_session_del_gc"]
    result = record["repeats"][0]["result"]
    result["final_rss"] = result["baseline_rss"] - 41 * KIB
    record["summary"]["retained"] = -41.0 * KIB
    c = cell(cells_of([write(tmp_path / "neg.json", base), TF221]), "sweep", "clear_session_del_gc", "retained")
    assert c["ratio"] is None and c["difference"] == pytest.approx(c["value"] + 41 * KIB)
    code, text = call(["compare", str(tmp_path / "neg.json"), TF221])
    [line] = [ln for ln in text.splitlines() if "retained" in ln and "sweep" in ln]
    assert "Δ +15.4 MiB" in line and "x " not in line.split("Δ")[0].split("MiB")[-1]
    assert compare.ratio(-2.0, 4.0) is None and compare.ratio(0.0, 4.0) is None and compare.ratio(-2.0, -4.0) == 2.0


def test_skipped_pair_is_n_a(tmp_path):
    data = as_version(payload(), "2.22.0")
    data["records"][0].update(status="skipped", reason="needs an API this TF lacks")
    cells = cells_of([TF221, write(tmp_path / "skip.json", data)])
    c = cell(cells, "sweep", "clear_session_del_gc", "peak_over_baseline")
    assert c["verdict"] == "n/a" and "skipped" in c["why"]
    assert cells[-1]["verdict"] == "n/a"


def test_too_few_iterations_for_a_slope(tmp_path):
    a = write(tmp_path / "a.json", synthetic("2.15.1", slope=0, n=2))
    b = write(tmp_path / "b.json", synthetic("2.16.2", slope=4 * MIB, n=2))
    code, text = call(["compare", a, b, "--format", "json"])
    growth = cell(json.loads(text)["cells"], "sweep", "clear_session_del_gc", "growth_per_iter")  # strict JSON: no NaN
    assert code == 0 and growth["verdict"] == "inconclusive" and growth["value"] is None


def test_versions_sort_as_numbers_and_every_version_meets_the_baseline(tmp_path):
    old = write(tmp_path / "old.json", as_version(payload(), "2.9.0"))
    cells = cells_of([TF212, TF221, old])
    assert {c["baseline"] for c in cells} == {"2.9.0"}
    assert {c["version"] for c in cells} == {"2.12.1", "2.21.0"}
    assert len(cells) == 2 * 3 * len(headline_metrics())


# ---------------------------------------------------------------- inputs


def _tree(root, host, commit, version_payload, env):
    folder = root / "records" / host / f"{commit}-{env}"
    folder.mkdir(parents=True)
    data = dict(version_payload, profile="quick")
    for r in data["records"]:
        r["environment"].pop("hostname", None)
    return write(folder / "sweep.json", data)


def test_reads_an_asv_records_tree(tmp_path):
    _tree(tmp_path, "box", "0123abcd", payload(TF212), "virtualenv-py3.11-tensorflow-cpu2.12.1")
    _tree(tmp_path, "box", "0123abcd", payload(TF221), "virtualenv-py3.11-tensorflow-cpu2.21.0")
    (tmp_path / "records" / "box" / "machine.json").write_text('{"machine": "box"}')  # not records: ignored
    code, text = call(["compare", str(tmp_path / "records"), "--format", "json"])
    assert code == 0 and json.loads(text)["versions"] == ["2.12.1", "2.21.0"]


def test_different_commits_in_a_tree_are_refused(tmp_path, capsys):
    _tree(tmp_path, "box", "0123abcd", payload(TF212), "env-tensorflow-cpu2.12.1")
    other = _tree(tmp_path, "box", "fedcba98", payload(TF221), "env-tensorflow-cpu2.21.0")
    assert call(["compare", str(tmp_path / "records")])[0] == 2
    err = capsys.readouterr().err
    assert "different commits" in err and other in err


def _one_line_error(argv, capsys):
    code, text = call(argv)
    err = capsys.readouterr().err
    assert code == 2 and text == ""
    assert err.startswith("kerasbench: error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_no_records_found(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    err = _one_line_error(["compare", str(tmp_path / "empty")], capsys)
    assert "No records" in err and str(tmp_path / "empty") in err


def test_missing_path(tmp_path, capsys):
    err = _one_line_error(["compare", TF212, str(tmp_path / "nope.json")], capsys)
    assert str(tmp_path / "nope.json") in err


def test_unknown_baseline_lists_the_valid_ones(capsys):
    err = _one_line_error(["compare", TF212, TF221, "--baseline", "2.99"], capsys)
    assert "2.99" in err and "Expected one of: 2.12.1, 2.21.0" in err


def test_one_version_is_not_a_comparison(capsys):
    assert "two or more TF versions" in _one_line_error(["compare", TF221], capsys)


def with_body(data, name=None, sha=None):
    """The records as kerasbench.measure(body=...) writes them: loop repro × reuse_model, the body named (or not:
    records from before bodies were named)."""
    for r in data["records"]:
        r["loop"], r["strategy"] = "repro", "reuse_model"
        r["spec"].update(loop="repro", strategy="reuse_model", repro="/tmp/kerasbench-body-1/kerasbench_body.py")
        if name:
            r["spec"].update(body=name, body_sha256=sha)
    return data


def test_records_of_different_bodies_are_refused_naming_both(tmp_path, capsys):
    a = write(tmp_path / "a.json", with_body(synthetic("2.15.1", slope=0), "nb:predict_once", "a" * 12))
    b = write(tmp_path / "b.json", with_body(synthetic("2.16.2", slope=MIB, seed=1), "nb:fit_once", "b" * 12))
    err = _one_line_error(["compare", a, b], capsys)
    assert (f"The records of repro × reuse_model measured different bodies: nb:predict_once (sha256 {'a' * 12}) on "
            f"2.15.1 and nb:fit_once (sha256 {'b' * 12}) on 2.16.2; compare measures one body across versions") in err
    edited = write(tmp_path / "c.json", with_body(synthetic("2.16.2", slope=MIB, seed=1), "nb:predict_once", "c" * 12))
    err = _one_line_error(["compare", a, edited], capsys)
    assert f"two sources of the body nb:predict_once (sha256 {'a' * 12} on 2.15.1, {'c' * 12} on 2.16.2)" in err


def test_records_of_one_body_or_of_no_named_body_compare_as_before(tmp_path):
    a = write(tmp_path / "a.json", with_body(synthetic("2.15.1", slope=0), "nb:predict_once", "a" * 12))
    for new in (with_body(synthetic("2.16.2", slope=MIB, seed=1), "nb:predict_once", "a" * 12),
                with_body(synthetic("2.16.2", slope=MIB, seed=1))):  # older records: no name to tell them apart
        b = write(tmp_path / "b.json", new)
        assert cell(cells_of([a, b]), "repro", "reuse_model", "growth_per_iter")["verdict"] == "regressed"


def test_different_hardware_is_said_per_cell_not_refused(tmp_path):
    data = as_version(payload(), "2.22.0")
    for r in data["records"]:
        r["environment"].update(cpu_model="Intel Xeon", machine_name="xeon-box")
    other = write(tmp_path / "other.json", data)
    code, text = call(["compare", TF221, other, "--format", "json"])
    cells = json.loads(text)["cells"]
    assert code == 0 and cells
    for c in cells:
        assert "Intel Xeon" in c["hardware"] and c["why"].startswith("other hardware (cpu_model ")
        assert "figures not comparable" in c["why"] and c["machines"].endswith(" vs xeon-box")
        assert c["verdict"] == ("n/a" if c["figures_verdict"] == "n/a" else "not comparable")
    assert "different hardware" in json.loads(text)["context"]


def test_other_machine_names_on_the_same_hardware_are_comparable(tmp_path):
    data = as_version(payload(), "2.22.0")
    for r in data["records"]:
        r["environment"].update(machine_name="ci-other", hostname="runner-123")
    code, text = call(["compare", TF221, write(tmp_path / "other.json", data), "--format", "json"])
    out = json.loads(text)
    assert code == 0 and all(c["hardware"] is None and "other hardware" not in c["why"] for c in out["cells"])
    assert "ci-other (TF 2.22.0)" in out["context"] and "the same hardware fingerprint" in out["context"]


def test_mixed_schema_versions_are_refused(tmp_path, capsys):
    data = as_version(payload(), "2.22.0")
    data["schema"] = 2
    for r in data["records"]:
        r["schema"] = 2
    newer = write(tmp_path / "newer.json", data)
    err = _one_line_error(["compare", TF221, newer], capsys)
    assert "schema" in err and newer in err


@pytest.mark.parametrize("cut", [0, 100, -2])
def test_truncated_json_names_the_file(tmp_path, capsys, cut):
    text = pathlib.Path(TF221).read_text()
    bad = tmp_path / "bad.json"
    bad.write_text(text[:cut] if cut else "")
    err = _one_line_error(["compare", TF212, str(bad)], capsys)
    assert str(bad) in err and "Cannot parse" in err


def test_not_a_records_file(tmp_path, capsys):
    other = write(tmp_path / "asv.json", {"version": 2})
    assert other in _one_line_error(["compare", TF212, other], capsys)


def test_record_without_its_keys(tmp_path, capsys):
    data = payload()
    del data["records"][1]["repeats"]
    broken = write(tmp_path / "broken.json", data)
    assert broken in _one_line_error(["compare", TF212, broken], capsys)


def test_duplicate_pair_for_one_version(tmp_path, capsys):
    """Within one argument (a folder) a pair measured twice for one release is an error; across two arguments
    the same release is two sides (test_one_release_in_two_arguments_is_two_labelled_sides_the_first_the_baseline)."""
    folder = tmp_path / "runs"
    folder.mkdir()
    write(folder / "a.json", payload())
    copy_ = write(folder / "again.json", payload())
    err = _one_line_error(["compare", TF212, str(folder)], capsys)
    assert "Duplicate" in err and copy_ in err


def test_bad_input_writes_nothing(tmp_path, capsys):
    (tmp_path / "bad.json").write_text('{"schema": 1, "records": [')
    out = tmp_path / "out" / "cmp.md"
    out.parent.mkdir()
    _one_line_error(["compare", TF212, str(tmp_path / "bad.json"), "--output", str(out)], capsys)
    assert os.listdir(out.parent) == []


# ---------------------------------------------------------------- formats


def test_table_by_default():
    code, text = call(["compare", TF212, TF221])
    assert code == 0
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["loop", "strategy", "metric"] and "verdict" in lines[0]
    assert "regressed" in lines[2]  # regressions first
    assert "TF 2.12.1: Keras 2.12.0" in text and "regressed" in lines[-1]


def test_json_loads():
    code, text = call(["compare", TF212, TF221, "--format", "json"])
    data = json.loads(text)
    assert code == 0 and data["baseline"] == "2.12.1" and data["versions"] == ["2.12.1", "2.21.0"]
    assert len(data["cells"]) == 3 * len(headline_metrics())
    assert set(compare.FIELDS) <= set(data["cells"][0])


def test_csv_reads():
    code, text = call(["compare", TF212, TF221, "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(text)))
    assert code == 0 and len(rows) == 3 * len(headline_metrics())
    assert rows[0]["verdict"] == "regressed" and float(rows[0]["value"]) > 0


def test_markdown_has_a_header_row():
    code, text = call(["compare", TF212, TF221, "--format", "markdown"])
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if re.match(r"\| loop +\|", line))
    assert code == 0 and re.fullmatch(r"\|(:?-+:?\|)+", lines[header + 1])
    assert all(line.count("|") == lines[header].count("|") for line in lines[header:])


def test_output_is_written_atomically(tmp_path):
    path = tmp_path / "cmp.csv"
    code, text = call(["compare", TF212, TF221, "--format", "csv", "--output", str(path)])
    assert code == 0 and f"wrote {3 * len(headline_metrics())} cells" in text and str(path) in text  # 3 pairs
    assert os.listdir(tmp_path) == ["cmp.csv"]  # no temp file left behind
    assert path.read_text().startswith("loop,strategy,metric")


def test_changes_only_leaves_out_unchanged_cells():
    code, text = call(["compare", TF212, TF221, "--format", "json", "--changes-only"])
    verdicts = {c["verdict"] for c in json.loads(text)["cells"]}
    assert code == 0 and "regressed" in verdicts and not verdicts & {"unchanged", "n/a"}


def test_help_documents_the_rules(capsys):
    assert call(["compare", "--help"])[0] == 0
    help_text = capsys.readouterr().out
    for words in ("growth_per_iter", "16 MiB", "1.5x", "Mann-Whitney", "exact counts"):
        assert words in help_text


# ---------------------------------------------------------------- the regression gate (--fail-on)


def _relabelled(tmp_path, version):
    """The 2.12 fixture's records as if measured on TF `version`: the same series, so every cell is unchanged."""
    payload = json.loads((FIXTURES / "tf212.json").read_text())
    for record in payload["records"]:
        if record.get("environment"):
            record["environment"]["tensorflow"] = version
    path = tmp_path / f"tf{version}.json"
    path.write_text(json.dumps(payload))
    return str(path)


def test_fail_on_regressed_exits_1_listing_the_failing_cells(capsys):
    out = io.StringIO()
    code = main(["compare", str(FIXTURES / "tf212.json"), str(FIXTURES / "tf221.json"), "--fail-on", "regressed"],
                out=out)
    err = capsys.readouterr().err
    assert code == 1
    assert "cell(s) are regressed (--fail-on)" in err
    assert "sweep × clear_session_del_gc growth_per_iter: regressed on TF 2.21.0 vs 2.12.1" in err
    assert "improved" not in err.split("\n", 1)[1]  # only the cells the gate names
    assert "regressed" in out.getvalue()  # the comparison itself is still printed


def test_fail_on_passes_a_clean_comparison(tmp_path, capsys):
    clean = _relabelled(tmp_path, "2.12.2")
    out = io.StringIO()
    assert main(["compare", str(FIXTURES / "tf212.json"), clean, "--fail-on", "regressed,inconclusive"], out=out) == 0
    assert "--fail-on" not in capsys.readouterr().err
    assert "unchanged" in out.getvalue()


def test_without_fail_on_compare_exits_0_whatever_it_finds():
    assert main(["compare", str(FIXTURES / "tf212.json"), str(FIXTURES / "tf221.json")], out=io.StringIO()) == 0


@pytest.mark.parametrize("value", ["nope", "", "regressed,unchanged"])
def test_fail_on_names_only_verdicts_a_gate_can_fail_on(value, capsys):
    assert main(["compare", str(FIXTURES / "tf212.json"), str(FIXTURES / "tf221.json"), "--fail-on", value],
                out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.startswith("kerasbench: error: Unknown fail-on.") and "regressed" in err and "Traceback" not in err


def test_one_release_on_two_machines_names_them(tmp_path, capsys):
    data = payload(TF221)
    for r in data["records"]:
        r["environment"].update(machine_name="ci-b")
    merged = tmp_path / "merged"  # one argument holding both machines' records of one release (a merged tree)
    merged.mkdir()
    write(merged / "a.json", payload(TF221))
    write(merged / "b.json", data)
    err = _one_line_error(["compare", TF212, str(merged)], capsys)
    assert "Duplicate record for TF 2.21.0" in err and "and ci-b: compare one machine's folder" in err


# ---------------------------------------------------------------- one release, two sides (a pull request vs main)


def test_one_release_in_two_arguments_is_two_labelled_sides_the_first_the_baseline(tmp_path):
    main_run = write(tmp_path / "main.json", as_version(payload(TF212), "2.21.0"))  # main published: flat sweep
    pr_run = write(tmp_path / "pr.json", payload(TF221))  # the pull request: sweep grows 3.6 MiB a model
    loaded = compare.load([main_run, pr_run])
    assert {version for _, _, version in loaded} == {"2.21.0+main", "2.21.0+pr"}
    cells = compare.compare(compare.group(loaded))
    found = cell(cells, "sweep", "clear_session_del_gc", "growth_per_iter")
    assert (found["baseline"], found["version"], found["verdict"]) == ("2.21.0+main", "2.21.0+pr", "regressed")
    backwards = compare.compare(compare.group(compare.load([pr_run, main_run])))
    assert cell(backwards, "sweep", "clear_session_del_gc", "growth_per_iter")["verdict"] == "improved"


def test_the_gate_of_a_pull_request_against_main(tmp_path, capsys):
    main_run = write(tmp_path / "main.json", as_version(payload(TF212), "2.21.0"))
    assert main(["compare", main_run, TF221, "--fail-on", "regressed"], out=io.StringIO()) == 1
    assert "sweep × clear_session_del_gc growth_per_iter: regressed on TF 2.21.0+tf221 vs 2.21.0+main" \
        in capsys.readouterr().err
    same = write(tmp_path / "again.json", payload(TF221))
    assert main(["compare", TF221, same, "--fail-on", "regressed"], out=io.StringIO()) == 0


def test_two_public_reports_of_one_release_in_two_files_are_one_column_not_two_sides(tmp_path):
    # `kerasbench run --repro …/reports/<name>.py --json <name>-2.21.0.json`, one file per report: every record's
    # loop is `repro`, so the check for a pair measured twice took them for one loop twice and gave each file a
    # side of its own (a column per report in the table)
    def report(name):
        data = payload(TF221)
        first = copy.deepcopy(data["records"][0])
        first.update(loop="repro", strategy="reuse_model")
        first["spec"] = {**first["spec"], "repro": f"/x/kerasbench/examples/reports/{name}.py"}
        return {**data, "records": [first]}

    paths = [write(tmp_path / f"{n}-2.21.0.json", report(n)) for n in ("tf33009_predict", "tf44176_shuffle")]
    assert {version for _, _, version in compare.load(paths)} == {"2.21.0"}
    grouped = compare.group(compare.load(paths))
    assert set(grouped["2.21.0"]) == {("report:tf33009_predict", "reuse_model"),
                                      ("report:tf44176_shuffle", "reuse_model")}
    same = [write(tmp_path / f"again-{i}.json", report("tf33009_predict")) for i in range(2)]  # one report twice
    assert {version for _, _, version in compare.load(same)} == {"2.21.0+again.0", "2.21.0+again.1"}


def test_different_releases_still_load_as_one_comparison():
    assert {version for _, _, version in compare.load([TF212, TF221])} == {"2.12.1", "2.21.0"}


# ---------------------------------------------------------------- the gate across hardware


def _on_other_hardware(tmp_path, path, **hardware):
    """`path`'s records as if measured on another machine whose hardware fingerprint differs by `hardware`."""
    data = payload(path)
    for r in data["records"]:
        r["environment"].update(machine_name="gha-other", **hardware)
    return write(tmp_path / f"other-{pathlib.Path(path).stem}.json", data)


def test_a_regression_on_one_fingerprint_fails_the_gate(tmp_path, capsys):
    main_run = write(tmp_path / "main.json", as_version(payload(TF212), "2.21.0"))  # main: flat sweep
    out = io.StringIO()
    assert main(["compare", main_run, TF221, "--changes-only", "--format", "markdown", "--fail-on", "regressed"],
                out=out) == 1
    assert "sweep × clear_session_del_gc growth_per_iter: regressed on TF 2.21.0+tf221" in capsys.readouterr().err
    assert any("regressed" in row for row in md_rows(out.getvalue())) and "other hardware" not in out.getvalue()


@pytest.mark.parametrize("hardware", [{"cpu_count": 8}, {"cpu_model": "Intel Xeon", "memory_total": 16 << 30}])
def test_a_regression_across_two_fingerprints_is_not_comparable_and_passes_the_gate(tmp_path, capsys, hardware):
    main_run = write(tmp_path / "main.json", as_version(payload(TF212), "2.21.0"))
    pr_run = _on_other_hardware(tmp_path, TF221, **hardware)  # the same regression, measured on other hardware
    cells = compare.compare(compare.group(compare.load([main_run, pr_run])))
    found = cell(cells, "sweep", "clear_session_del_gc", "growth_per_iter")
    assert (found["verdict"], found["figures_verdict"]) == ("not comparable", "regressed")
    assert found["why"].startswith(f"other hardware ({next(iter(hardware))} ")
    assert "figures not comparable (the figures alone: regressed, " in found["why"]
    assert not {c["verdict"] for c in cells} & {"regressed", "improved"}  # nowhere, in any metric
    out = io.StringIO()
    assert main(["compare", main_run, pr_run, "--changes-only", "--format", "markdown", "--fail-on", "regressed"],
                out=out) == 0
    assert "--fail-on" not in capsys.readouterr().err
    text = out.getvalue()  # the job summary says why the gate passed
    assert any(row[-2] == "not comparable" and row[-1].startswith("other hardware (") for row in md_rows(text))
    assert "the figures alone: regressed" in text
    assert "different hardware" in text
    assert main(["compare", main_run, pr_run, "--fail-on", "not comparable"], out=io.StringIO()) == 1  # if asked


def test_the_report_marks_cells_of_other_hardware_not_comparable(tmp_path):
    from kerasbench import report

    main_run = write(tmp_path / "main.json", as_version(payload(TF212), "2.21.0"))
    page = report.build([main_run, _on_other_hardware(tmp_path, TF221, cpu_count=8)])
    assert 'class="cmp not comparable"' in page and 'class="cmp regressed"' not in page


def test_records_of_two_protocols_are_refused_or_judged_again_when_asked(tmp_path):
    """A record of protocol 7 or older (no stamp: the fixture's) beside one of this protocol: refused, one line naming
    both files; --rejudge judges the older one again from its series, and its summary says from which protocol."""
    from kerasbench.rule import PROTOCOL_VERSION

    old = TF212
    new = write(tmp_path / "new.json", synthetic("2.21.0", 0.0))
    assert json.loads(pathlib.Path(new).read_text())["records"][0]["summary"]["protocol"] == PROTOCOL_VERSION
    code, _ = call(["compare", old, new])
    assert code == 2
    with pytest.raises(Exception) as refused:
        compare.group(compare.load([old, new]))
    text = str(refused.value)
    assert f"{new} was judged by protocol {PROTOCOL_VERSION}, {old} by protocol 7 or older (unstamped)" in text
    assert "--rejudge" in text and "\n" not in text
    groups = compare.group(compare.load([old, new]), rejudge=True)
    summaries = [r["summary"] for g in groups.values() for r, _ in g.values()]
    assert {s["protocol"] for s in summaries} == {PROTOCOL_VERSION}
    assert {s.get("rejudged_from") for s in summaries} == {"7 or older", None}
    code, out = call(["compare", old, new, "--rejudge", "--format", "csv"])
    assert code == 0 and out.startswith("loop,")


def test_each_sides_uncertainty_on_its_metrics_own_scale():
    """What triage and attribute place a middle build with (rule.place): a slope's CI half-width over its z, a
    magnitude's noise, a count exact; nothing for seconds, or for counts over runs of different lengths."""
    slope = {"value": 100.0, "low": 80.0, "high": 120.0, "alpha": 0.05}
    assert compare.uncertain_value("growth_per_iter", slope) == (100.0, pytest.approx(20 / 1.95996, rel=1e-4))
    looked = dict(slope, alpha=0.05 / 17)  # a look's level: a wider CI for the same uncertainty
    assert compare.uncertain_value("growth_per_iter", looked)[1] == pytest.approx(20 / 2.9728, rel=1e-3)
    assert compare.uncertain_value("peak_over_setup", {"value": 5.0, "noise": 2.0}) == (5.0, 2.0)
    assert compare.uncertain_value("peak_over_setup", {"value": 5.0, "noise": float("nan")}) is None  # unknown noise
    assert compare.uncertain_value("objects_per_iter", {"value": 5.0, "noise": float("nan")}) == (5.0, 0.0)
    count = {"value": 3, "per_repeat": [3, 3], "lengths": [20, 20]}
    assert compare.uncertain_value("train_traces", count) == (3.0, 0.0)
    assert compare.uncertain_values("train_traces", [count, dict(count, lengths=[12, 12])]) is None
    assert compare.uncertain_value("seconds_per_iter", {"value": 0.5}) is None


def test_the_table_fits_columns_and_wide_keeps_one_line_a_cell(monkeypatch):
    paths = [str(FIXTURES / "tf212.json"), str(FIXTURES / "tf221.json")]
    monkeypatch.delenv("COLUMNS", raising=False)
    piped = io.StringIO()
    assert main(["compare", *paths], out=piped) == 0  # a pipe without $COLUMNS: any width, as before
    natural = max(len(line) for line in piped.getvalue().splitlines())
    monkeypatch.setenv("COLUMNS", "150")
    fitted = io.StringIO()
    assert main(["compare", *paths], out=fitted) == 0
    table = fitted.getvalue().split("\n\n")[0].splitlines()
    assert natural > 150 and max(len(line) for line in table) <= 150
    words = lambda text: sorted(w for w in text.split() if set(w) != {"-"})  # noqa: E731 -- the same cells, wrapped
    assert words(fitted.getvalue()) == words(piped.getvalue()) and len(table) > len(piped.getvalue().split("\n\n")[0]
                                                                                  .splitlines())
    wide = io.StringIO()
    assert main(["compare", *paths, "--wide"], out=wide) == 0
    assert wide.getvalue() == piped.getvalue()


def test_every_kind_of_compare_rule_has_its_judging():
    """compare picks what a side reads, the judgement and the uncertainty from one table by the rule's kind (no
    isinstance chains): every kind metrics declares, and every rule a metric uses, has its row."""
    import typing

    from kerasbench.compare import JUDGING
    from kerasbench.metrics import METRICS, CompareRule

    assert set(typing.get_args(CompareRule)) == set(JUDGING)
    assert {type(m.compare) for m in METRICS.values() if m.compare is not None} <= set(JUDGING)
    assert [kind.__name__ for kind, j in JUDGING.items() if j.totals] == ["ExactCount"]
    assert [kind.__name__ for kind in JUDGING if kind.alone] == ["TimingBand"]  # the runner's "a time alone"


def _judged(verdict="flat", heap="flat", floors=("calibration", "settling"), protocol=8, iterations=20, repeats=1):
    summary = {"verdict": verdict, "heap_verdict": heap, "floor": 1024.0, "repeats": repeats, "p_trend": None}
    if protocol is not None:
        summary.update(protocol=protocol, floors_from={"rss": {"kind": floors[0]}, "heap": {"kind": floors[1]}})
    return {"loop": "sweep", "strategy": "s", "status": "ok", "summary": summary, "repeats": [],
            "spec": {"iterations": iterations, "repeats": repeats}, "environment": {"python": "3.11.7"}}


def test_the_note_says_what_is_weak_for_the_protocol_that_judged_the_records():
    """A default-profile run (one repeat, decided by looks) is not weak for its counts: under protocol 8 the note
    counts the pairs left undecided and those judged at the default or a given floor, and says nothing when none is."""
    def note(*records):
        grouped = {v: {(f"loop{i}", "s"): (copy.deepcopy(r), "p") for i, r in enumerate(records)}
                   for v in ("2.12.1", "2.21.0")}
        return compare.weak_note(grouped)

    assert note(_judged(), _judged("grows", "grows")) is None  # decided, at calibrated floors: no note, 1 repeat
    text = note(_judged(), _judged("inconclusive"), _judged(floors=("default", "default")),
                _judged(floors=("given", "calibration")))
    assert text.startswith("note: of 8 pairs measured, 2 undecided (inconclusive); 2 judged at the 64 KiB default "
                           "floor (no calibration fits them); 2 at a given floor: those verdicts are weak")
    assert "protocol 8 decided the other 2 by sequential looks against their floors" in text
    assert "calibrate this machine" in text
    # records before the stamp keep the old rule of thumb, said as theirs
    old = note(_judged(protocol=None, iterations=4))
    assert "2 judged before protocol 8 (unstamped) with fewer than 8 iterations or 2 repeats per pair" in old
    assert note(_judged(protocol=None, iterations=30, repeats=2)) is None
