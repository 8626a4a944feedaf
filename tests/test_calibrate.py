"""Calibration and allocators: analysis on simulated series, stored floors, allocator selection, the CLI."""

import io
import json
import math
import os

import numpy as np
import pytest

from kerasbench import allocators, calibration, calibration_store, measure, rule, RunSpec, session, stats, UsageError
from kerasbench.cli import main
from kerasbench.rule import spec_floors

KIB, MIB = 1024, 1024**2
RATES = [4 * KIB, 16 * KIB, 64 * KIB, 256 * KIB]


def call(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


def md_rows(text):
    """The cells of each markdown table row of `text`, padding stripped."""
    return [tuple(c.strip() for c in line.strip()[1:-1].split("|")) for line in text.splitlines()
            if line.startswith("|")]


def has_row(text, *cells):
    """Whether a markdown row of `text` begins with `cells`."""
    return any(row[:len(cells)] == cells for row in md_rows(text))


def simulate(rate, noise, runs=20, n=60, seed=0, hidden_below=0):
    """RSS series of a leak of `rate` bytes/iteration with Gaussian noise; leaks below `hidden_below` never show."""
    rng = np.random.default_rng(seed)
    shown = 0 if rate < hidden_below else rate
    return [list(300 * MIB + shown * np.arange(n) + rng.normal(0, noise, n)) for _ in range(runs)]


def simulated_runs(noise, hidden_below=0, heaps=("native", "python")):
    runs = {"noop": {0: simulate(0, noise, seed=1)}}
    for h, heap in enumerate(heaps):
        runs[heap] = {r: simulate(r, noise, seed=10 * h + i + 2, hidden_below=hidden_below)
                      for i, r in enumerate(RATES)}
    return runs


# --- analysis on simulated series ----------------------------------------------------------------

def test_quiet_series_detect_the_smallest_rate():
    report = calibration.analyze(simulated_runs(noise=0.5 * KIB), [30, 60], RATES)
    for n in ("30", "60"):
        r = report["by_iterations"][n]
        assert r["smallest_detected"] == {"native": 4 * KIB, "python": 4 * KIB}
        assert r["floor"] == 2 * KIB and r["detects"] == 4 * KIB
        assert r["false_positive"][str(4 * KIB)] <= calibration.FALSE_POSITIVE
        for heap in ("native", "python"):
            for c in r["cells"][heap].values():
                assert abs(c["median_error"]) < 0.05


def test_noise_moves_the_floor_up_and_more_iterations_bring_it_down():
    # 200 KiB of noise (a slope's standard error ~4 KiB over 30 points, ~1.5 KiB over 60)
    report = calibration.analyze(simulated_runs(noise=200 * KIB), [30, 60], RATES)
    floor30 = report["by_iterations"]["30"]["floor"]
    floor60 = report["by_iterations"]["60"]["floor"]
    assert floor30 is not None and floor60 is not None
    assert floor60 <= floor30
    assert report["by_iterations"]["30"]["cells"]["native"][str(4 * KIB)]["detected"] < calibration.DETECT
    assert report["by_iterations"]["60"]["cells"]["native"][str(256 * KIB)]["detected"] == 1.0


def test_leaks_hidden_by_the_heap_are_reported_as_missed():
    # glibc-like: leaks below 64 KiB fill heap holes and RSS never moves
    report = calibration.analyze(simulated_runs(noise=0.5 * KIB, hidden_below=64 * KIB), [60], RATES)
    r = report["by_iterations"]["60"]
    assert r["smallest_detected"]["native"] == 64 * KIB
    assert r["cells"]["native"][str(16 * KIB)]["median_error"] == pytest.approx(-1.0, abs=0.05)
    assert r["floor"] == 32 * KIB


def test_false_positives_on_the_empty_loop_disqualify_a_floor():
    runs = simulated_runs(noise=0.5 * KIB)
    # an empty loop whose RSS staircases 3 KiB an iteration: a floor of 2 KiB would call it a leak
    runs["noop"][0] = simulate(3 * KIB, 0.5 * KIB, seed=99)
    r = calibration.analyze(runs, [30], RATES)["by_iterations"]["30"]
    assert r["false_positive"][str(4 * KIB)] == 1.0
    assert r["floor"] == 8 * KIB and r["detects"] == 16 * KIB


def test_nothing_detected_means_no_floor():
    runs = simulated_runs(noise=0.5 * KIB, hidden_below=10**9)
    r = calibration.analyze(runs, [30], RATES)["by_iterations"]["30"]
    assert r["floor"] is None and r["smallest_detected"] == {"native": None, "python": None}


def test_heap_floors_are_judged_on_native_leaks_and_shown_beside_rss():
    # glibc-like: RSS hides native leaks under 64 KiB; the heap reading sees every native leak, no Python object
    rss = simulated_runs(noise=0.5 * KIB, hidden_below=64 * KIB)
    heap = simulated_runs(noise=0.01 * KIB)
    heap["python"] = {r: simulate(0, 0.01 * KIB, seed=30 + i) for i, r in enumerate(RATES)}
    report, heap_report = calibration.analyze_series({"rss": rss, "heap": heap}, [30], RATES)
    assert report["by_iterations"]["30"]["floor"] == 32 * KIB
    h = heap_report["by_iterations"]["30"]
    assert h["floor"] == 2 * KIB and h["smallest_detected"] == {"native": 4 * KIB, "python": None}
    cal = calibration.make_calibration(report, "glibc", "glibc", runs=20, warmup=2, seconds=1.0,
                                       heap_report=heap_report)
    assert cal["floors"] == {"30": 32 * KIB} and cal["heap_floors"] == {"30": 2 * KIB}
    assert ("glibc", "30", "64", "4", "64", "0% / 0%", "32", "2") in calibration.summary_rows(cal)
    text = calibration.render([cal])
    assert has_row(text, "glibc", "30", "native", "4", "0% / 100%") and has_row(text, "glibc", "30", "python", "4",
                                                                                 "0% / 0%")
    assert ("glibc", "30", "64", "4", "64", "0% / 0%", "32", "2") in md_rows(text)
    assert calibration.analyze_series({"rss": rss}, [30], RATES)[1] is None  # no heap reading: no heap report


def test_heap_floor_for(tmp_path, monkeypatch):
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))
    cal = fake_calibration(floors={"30": 32 * KIB})
    calibration_store.save(cal, calibration_store.path_for("glibc"))
    assert "has no heap floors" in rule.floor_for("glibc", 30, series="heap")[1]
    cal["heap_floors"] = {"30": 0.5 * KIB}
    calibration_store.save(cal, calibration_store.path_for("glibc"))
    assert rule.floor_for("glibc", 30, series="heap")[0] == 0.5 * KIB
    assert rule.floor_for("glibc", 30)[0] == 32 * KIB


def test_a_calibration_read_again_is_the_file_as_it_is_now(tmp_path, monkeypatch):
    """floors.read keeps what it parsed while the file is unchanged: a caller changing what it was given, or the
    file changed in place (same path), never shows in the next read."""
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))
    path = calibration_store.path_for("glibc")
    calibration_store.save(fake_calibration(floors={"30": 32 * KIB}), path)
    first = calibration_store.read(path, "glibc")
    first["floors"]["30"] = 1
    assert calibration_store.read(path, "glibc")["floors"] == {"30": 32 * KIB}
    data = json.loads(open(path).read())
    data["floors"] = {"30": 64 * KIB}
    with open(path, "w") as f:  # rewritten in place: same inode, another size
        json.dump(data, f)
    assert calibration_store.read(path, "glibc")["floors"] == {"30": 64 * KIB}
    with open(path, "w") as f:
        f.write("{")
    with pytest.raises(UsageError, match="Bad calibration file"):
        calibration_store.read(path, "glibc")


def test_a_shorter_count_reads_the_first_points():
    # a leak that starts after 30 iterations: invisible in the first 30 points
    late = [list(300 * MIB + 256 * KIB * np.maximum(np.arange(60) - 30, 0)) for _ in range(5)]
    c30 = calibration.cell_stats(late, 64 * KIB, 30)
    c60 = calibration.cell_stats(late, 64 * KIB, 60)
    assert c30["detected"] == 0.0 and c30["median_slope"] == 0.0
    assert c60["median_slope"] > 0


# --- stored calibration ----------------------------------------------------------------------------

def fake_calibration(allocator="glibc", floors=None):
    report = calibration.analyze(simulated_runs(noise=0.5 * KIB), [30, 60], RATES)
    cal = calibration.make_calibration(report, allocator, "glibc", runs=20, warmup=2, seconds=1.0)
    if floors is not None:
        cal["floors"] = floors
    return cal


def test_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))
    cal = fake_calibration()
    path = calibration_store.save(cal, calibration_store.path_for("glibc"))
    assert os.path.dirname(path) == str(tmp_path)
    assert os.path.basename(path) == calibration_store.file_name(calibration_store.environment_key("glibc"))
    assert os.path.basename(path).startswith("glibc-glibc_") and "-py3." in path  # keyed, not by host
    assert [p for p in os.listdir(tmp_path)] == [os.path.basename(path)]  # no temp file left behind
    assert calibration_store.load("glibc") == json.loads(json.dumps(cal))
    assert calibration_store.load("tcmalloc") is None
    assert "glibc" in calibration.render([cal]) and has_row(calibration.render([cal]), "glibc", "60")


def test_floor_for_picks_the_count(tmp_path, monkeypatch):
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))
    assert rule.floor_for("glibc", 30)[0] == rule.floors.default_resolution("rss", 30)  # the shipped glibc table's
    source = rule.floor_for("glibc", 30)[1]
    assert "default (no calibration for glibc at <= 30 iterations fits glibc on glibc" in source
    assert str(tmp_path) in rule.floor_for("glibc", 30)[1]  # says where it looked
    calibration_store.save(fake_calibration(floors={"30": 128 * KIB, "60": 32 * KIB, "100": None}),
                           calibration_store.path_for("glibc"))
    floor, source = rule.floor_for("glibc", 10)  # fewer than calibrated: it does not cover the run
    assert floor == rule.floors.default_resolution("rss", 10)
    assert "no calibration for glibc at <= 10 iterations" in source
    # between two calibrated counts the floor falls geometrically (log-log), not in a step at the next count
    floor, source = rule.floor_for("glibc", 45)
    assert floor == pytest.approx(128 * KIB * 0.25 ** (math.log(45 / 30) / math.log(2)))
    assert "45 iterations, between its 30 and 60" in source
    steps = [rule.floor_for("glibc", n)[0] for n in range(30, 61)]
    assert steps == sorted(steps, reverse=True) and max(a / b for a, b in zip(steps, steps[1:])) < 1.1
    floor, source = rule.floor_for("glibc", 60)
    assert floor == 32 * KIB and "calibration" in source and "60 iterations)" in source and "fits glibc on" in source
    floor, source = rule.floor_for("glibc", 500)
    assert floor == rule.floors.default_resolution("rss", 500) and "detected no tested rate at 100" in source


def test_a_calibration_fits_by_key_not_host(tmp_path, monkeypatch):
    shipped = tmp_path / "shipped"
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path / "mine"))
    monkeypatch.setattr(calibration_store, "SHIPPED", str(shipped))
    key = calibration_store.environment_key("glibc")
    other = fake_calibration(floors={"30": 16 * KIB})
    other.update(host="another-machine", key={**key, "library": "glibc 2.17"})  # another glibc: does not fit
    calibration_store.save(other, str(shipped / calibration_store.file_name(other["key"])))
    assert rule.floor_for("glibc", 30)[0] == rule.floors.default_resolution("rss", 30)
    same = fake_calibration(floors={"30": 8 * KIB})
    same["host"] = "another-machine"  # made elsewhere, same key: fits here
    calibration_store.save(same, str(shipped / calibration_store.file_name(key)))
    floor, source = rule.floor_for("glibc", 30)
    assert floor == 8 * KIB and str(shipped) in source
    mine = fake_calibration(floors={"30": 2 * KIB})  # the user's own folder comes first
    calibration_store.save(mine, calibration_store.path_for("glibc"))
    assert rule.floor_for("glibc", 30)[0] == 2 * KIB
    found = [p for p, _ in calibration_store.candidates("glibc")]
    assert found == [calibration_store.path_for("glibc"), str(shipped / calibration_store.file_name(key))]
    assert calibration_store.candidates("glibc_trim") == []  # glibc-*.json is not glibc_trim's


def test_a_worker_on_another_python_is_judged_by_its_own_pythons_calibration(tmp_path, monkeypatch):
    # `run --tf 2.11.1 --python 3.10` from a Python 3.11 parent judged its 3.10 workers at the 3.11 calibration
    # (32 KiB) while the same cell measured inside the 3.10 environment (asv) found none (64 KiB default): two
    # verdicts of one measurement. The key's Python is the workers'.
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path / "mine"))
    monkeypatch.setattr(calibration_store, "SHIPPED", str(tmp_path / "shipped"))
    ours = calibration_store.python_version()
    other = "3.9" if ours != "3.9" else "3.8"
    calibration_store.save(fake_calibration(floors={"30": 8 * KIB}), calibration_store.path_for("glibc"))
    assert rule.floor_for("glibc", 30)[0] == rule.floor_for("glibc", 30, python=ours + ".1")[0] == 8 * KIB
    floor, source = rule.floor_for("glibc", 30, python=f"{other}.13")
    assert floor == rule.floors.default_resolution("rss", 30) and f"Python {other};" in source
    assert rule.calibration_stamp("glibc", 30, python=other) == {"kind": "default"}
    interpreter = tmp_path / "python-other"  # an environment's interpreter: asked for its version
    interpreter.write_text(f"#!/bin/sh\necho {other}\n")
    interpreter.chmod(0o755)
    assert calibration_store.python_version(str(interpreter)) == other
    spec = RunSpec("control", "control_noop", iterations=30, python=str(interpreter))
    assert spec_floors(spec)["rss"](30)[0] == rule.floors.default_resolution("rss", 30)  # before the worker's word
    assert spec_floors(spec, {"python": f"{ours}.2"})["rss"](30)[0] == 8 * KIB  # the record's word wins
    assert spec_floors(spec, {"python": f"{other}.2"})["rss"].stamp(30) == {"kind": "default"}
    made = calibration.make_calibration(calibration.analyze(simulated_runs(noise=0.5 * KIB), [30], RATES), "glibc",
                                        "glibc", runs=20, warmup=2, seconds=1.0, python=str(interpreter))
    assert made["key"]["python"] == other  # controls run on that interpreter: stored under its Python
    assert calibration_store.path_for("glibc", str(interpreter)).endswith(f"-py{other}.json")
    calibration_store.save({**made, "floors": {"30": 4 * KIB}}, calibration_store.path_for("glibc", str(interpreter)))
    assert rule.floor_for("glibc", 30, python=other)[0] == 4 * KIB and rule.floor_for("glibc", 30)[0] == 8 * KIB
    broken = tmp_path / "python-broken"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    assert calibration_store.python_version(str(broken)) == "?"  # fits no calibration: the default, said


def test_the_count_nearest_below_the_run_wins_and_the_floor_line_names_what_it_outranks(tmp_path, monkeypatch):
    # A one-off calibration made for a run of 3 iterations (10 runs, in the user's folder) judged every later run
    # ahead of the shipped one (20 runs at every count): found twice on this project's VM, after smoke runs.
    shipped = tmp_path / "shipped"
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path / "mine"))
    monkeypatch.setattr(calibration_store, "SHIPPED", str(shipped))
    key = calibration_store.environment_key("glibc")
    calibration_store.save(fake_calibration(floors={"8": 128 * KIB, "30": 32 * KIB}),
                           str(shipped / calibration_store.file_name(key)))
    one_off = fake_calibration(floors={"3": 512 * KIB})
    one_off["runs"] = 10
    calibration_store.save(one_off, calibration_store.path_for("glibc"))
    assert rule.floor_for("glibc", 3)[0] == 512 * KIB  # only the one-off covers 3 iterations
    floor, source = rule.floor_for("glibc", 30)
    assert floor == 32 * KIB and str(shipped) in source and "ahead of" not in source  # the shipped count is nearer
    mine = fake_calibration(floors={"8": 64 * KIB, "30": 16 * KIB})  # the user's own, at the same counts: first
    calibration_store.save(mine, calibration_store.path_for("glibc"))
    floor, source = rule.floor_for("glibc", 30)
    assert floor == 16 * KIB and f"ahead of {shipped}" in source and "delete it to use that one" in source


def test_a_one_off_calibration_is_made_only_where_the_count_can_use_it(tmp_path, monkeypatch):
    """A run of 3 iterations calibrated for ~36 s, then was judged at the default resolution: no calibration detects
    a tested rate at 4 iterations. Now it says so and calibrates only where no calibration here tried so few
    iterations and found nothing (a count never tried, below a calibration's first, still calibrates on the fly:
    tests/test_faults_lifecycle.py)."""
    shipped = tmp_path / "shipped"
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path / "mine"))
    monkeypatch.setattr(calibration_store, "SHIPPED", str(shipped))
    asked = []
    monkeypatch.setattr(session, "calibrate_one", lambda name, runs, counts, *a, **k: asked.append(list(counts)))
    assert session.ensure_calibration("glibc", 3, io.StringIO()) is None  # none at all: every count, and 3
    assert asked[-1][0] == 3 and 2000 in asked[-1]
    cal = fake_calibration(floors={"4": None, "8": 128 * KIB, "30": 32 * KIB})  # as the shipped ones: none at 4
    cal["heap_floors"] = {"4": None, "8": 8 * KIB, "30": 2 * KIB}
    calibration_store.save(cal, str(shipped / calibration_store.file_name(calibration_store.environment_key("glibc"))))
    err = io.StringIO()
    why = session.ensure_calibration("glibc", 3, err)  # at or below a count a calibration here detected nothing at:
    assert len(asked) == 1 and why.startswith("not calibrated: at 3 iterations a calibration detects no tested rate")
    assert "(one here detected none at 4)" in why and "not calibrating" in err.getvalue()  # before: made
    assert session.ensure_calibration("glibc", 30, io.StringIO()) is None and len(asked) == 1  # it fits: nothing
    assert session.undetected_up_to("glibc") == 4


def test_an_old_host_keyed_file_still_loads(tmp_path, monkeypatch):
    import pathlib
    import shutil

    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))
    old = pathlib.Path(__file__).resolve().parent / "fixtures" / "calibration-schema1-glibc.json"
    data = json.loads(old.read_text())
    assert data["schema"] == 1 and "key" not in data
    shutil.copy(old, calibration_store.legacy_path("glibc"))
    assert calibration_store.load("glibc", calibration_store.legacy_path("glibc"))["floors"] == data["floors"]
    if data["host"] == __import__("platform").node():  # made on this host: it is this host's calibration
        floor, source = rule.floor_for("glibc", 30)
        assert floor == data["floors"]["30"] and "an old calibration of host" in source
    assert calibration.summary_rows(data)  # and it renders


@pytest.mark.parametrize("content", ["{not json", "[]", '{"schema": 1, "allocator": "glibc"}',
                                     '{"schema": 1, "allocator": "tcmalloc", "floors": {"30": 1}}',
                                     '{"schema": 1, "allocator": "glibc", "floors": {"30": -5}}',
                                     # Infinity (json reads it) would pass any leak as flat; a bool is no size
                                     '{"schema": 1, "allocator": "glibc", "floors": {"30": Infinity}}',
                                     '{"schema": 1, "allocator": "glibc", "floors": {"30": true}}',
                                     '{"schema": 1, "allocator": "glibc", "floors": {"30": 1}, '
                                     '"heap_floors": {"30": "lots"}}',
                                     '{"schema": 1, "allocator": "glibc", "floors": {"30": 1}, "heap_floors": [1]}'])
def test_bad_file_is_a_usage_error_naming_it(tmp_path, monkeypatch, content):
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))
    path = calibration_store.path_for("glibc")
    with open(path, "w") as f:
        f.write(content)
    with pytest.raises(UsageError) as e:
        calibration_store.load("glibc")
    assert path in str(e.value) and "Bad calibration file" in str(e.value)


def test_bad_file_makes_run_exit_2_with_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))
    path = calibration_store.path_for("glibc")
    with open(path, "w") as f:
        f.write("{truncated")
    code, _ = call(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "3"])
    err = capsys.readouterr().err
    assert code == 2 and path in err and err.count("\n") == 1 and "Traceback" not in err
    # a floor given on the command line is the margin: the resolution still comes from the file
    assert call(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "3",
                 "--floor-kib", "64"])[0] == 2


def test_the_resolution_follows_the_stored_calibration_and_the_margin_stays(tmp_path, monkeypatch):
    # 48 KiB/iteration of small Python objects is measured within ~10 % on glibc over 30 iterations: against a
    # 64 KiB margin, undecided at the default resolution (32 KiB: +48 ± 32 reaches it), flat at a calibrated 4
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))
    spec = dict(loop="control", strategy="control_leak_python", iterations=30, warmup=2, leak_bytes=48 * KIB,
                floor=64 * KIB)
    default = measure(RunSpec(**spec))
    assert default["summary"]["floor"] == rule.floors.default_resolution("rss", 30)
    assert default["summary"]["margin"] == 64 * KIB and default["summary"]["verdict"] == "inconclusive"  # given
    calibration_store.save(fake_calibration(floors={"30": 4 * KIB}), calibration_store.path_for("glibc"))
    calibrated = measure(RunSpec(**spec))
    assert calibrated["summary"]["floor"] == 4 * KIB and calibrated["summary"]["verdict"] == "flat"
    assert calibrated["summary"]["margin"] == 64 * KIB
    assert calibration_store.path_for("glibc") in calibrated["summary"]["floor_source"]
    # summarize alone (what asv reads) follows the stored floor too, and so does the table footer
    from kerasbench.runtable import run_table as table
    from kerasbench.summary import summarize

    assert summarize(default["repeats"], RunSpec(**spec), spec_floors(RunSpec(**spec)))["verdict"] == "flat"
    assert f"resolution 4 KiB/iteration, from calibration {calibration_store.path_for('glibc')}" in table([calibrated])


# --- allocators ------------------------------------------------------------------------------------

def test_missing_allocator_names_its_package(monkeypatch, capsys):
    monkeypatch.setattr(allocators, "library_present", lambda path: False)
    for name, package in (("tcmalloc", "libtcmalloc-minimal4"), ("jemalloc", "libjemalloc2")):
        with pytest.raises(UsageError) as e:
            RunSpec("control", "control_noop", allocator=name).validate()
        assert package in str(e.value) and name in str(e.value)
        code, _ = call(["run", "--loop", "control", "--strategy", "control_noop", "--allocator", name])
        err = capsys.readouterr().err
        assert code == 2 and package in err and err.count("\n") == 1
    RunSpec("control", "control_noop", allocator="glibc_trim").validate()  # glibc ones need no library


def test_unknown_allocator_lists_the_valid_ones():
    with pytest.raises(UsageError) as e:
        RunSpec("control", "control_noop", allocator="mimalloc").validate()
    assert all(name in str(e.value) for name in allocators.ALLOCATORS)


def test_worker_env_per_allocator():
    inherited = {"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2:/opt/other.so", "MALLOC_ARENA_MAX": "8",
                 "PATH": "/bin"}
    env = allocators.apply_env("tcmalloc", dict(inherited))
    assert env["LD_PRELOAD"] == allocators.ALLOCATORS["tcmalloc"].preload + ":/opt/other.so"
    assert "MALLOC_ARENA_MAX" not in env and env["PATH"] == "/bin"
    env = allocators.apply_env("glibc_arena2", dict(inherited))
    assert env["LD_PRELOAD"] == "/opt/other.so" and env["MALLOC_ARENA_MAX"] == "2"
    assert "LD_PRELOAD" not in allocators.apply_env("glibc", {"LD_PRELOAD": allocators.ALLOCATORS["jemalloc"].preload})
    # jemalloc runs without thread caches (their free regions count as allocated); a user's options are kept, ours last
    assert allocators.apply_env("jemalloc", {})["MALLOC_CONF"] == "tcache:false"
    assert allocators.apply_env("jemalloc", {"MALLOC_CONF": "narenas:2"})["MALLOC_CONF"] == "narenas:2,tcache:false"


@pytest.mark.parametrize("name", ["glibc_trim", "glibc_arena2", "tcmalloc", "jemalloc"])
def test_record_shows_requested_and_detected_allocator(name):
    a = allocators.ALLOCATORS[name]
    if a.preload and not os.path.exists(a.preload):
        pytest.skip(f"apt-get install {a.package}")
    # 40 iterations, not 10: jemalloc purges dirty pages on a timer (dirty_decay_ms), and one purge during
    # a 10-iteration loop on a loaded CI machine cut the slope by 11 % (233984 vs 262144 bytes/iteration)
    record = measure(RunSpec("control", "control_leak_native", iterations=40, warmup=1, leak_bytes=256 * KIB,
                             allocator=name, floor=64 * KIB))
    assert record["status"] == "ok"
    assert record["allocator"] == {"requested": name, "detected": a.detects, "matches": True}
    assert record["environment"]["allocator_requested"] == name
    assert abs(record["summary"]["growth_per_iter"] - 256 * KIB) <= 0.10 * 256 * KIB
    if name == "glibc_arena2":
        assert record["environment"]["env"]["MALLOC_ARENA_MAX"] == "2"


# --- the calibrate command -------------------------------------------------------------------------

@pytest.mark.parametrize("argv,needle", [
    (["calibrate", "--runs", "0"], "runs"),
    (["calibrate", "--counts", "many"], "counts"),
    (["calibrate", "--counts", "2"], "counts"),
    (["calibrate", "--rates-kib", "-4"], "rates-kib"),
    (["calibrate", "--allocator", "mimalloc"], "Unknown allocator"),
    (["calibrate", "--heaps", "gpu"], "Unknown heap"),
    (["calibrate", "--warmup", "-1"], "warmup"),
])
def test_calibrate_bad_input_is_one_line_exit_2(argv, needle, capsys):
    code, _ = call(argv)
    err = capsys.readouterr().err
    assert code == 2 and needle in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_calibrate_iterations_is_the_old_spelling_of_counts(monkeypatch, capsys):
    """`--counts 5,8` was `--iterations 5,8` (every other command's --iterations is one count): it still works, with
    one line saying the new name; its errors name the spelling given."""
    from kerasbench import session

    asked = []
    monkeypatch.setattr(session, "calibrate", lambda names, runs, iterations, *rest, **kw: asked.append(iterations)
                        or [])
    monkeypatch.setattr("kerasbench.calibration.render", lambda cals: "")
    assert call(["calibrate", "--iterations", "5,8"])[0] == 0
    assert call(["calibrate", "--counts", "5,8"])[0] == 0
    assert asked == [[5, 8], [5, 8]]
    err = capsys.readouterr().err
    assert err.count("--iterations is now --counts") == 1 and err.count("\n") == 1
    code, _ = call(["calibrate", "--iterations", "2"])
    assert code == 2 and "argument `iterations`" in capsys.readouterr().err


def test_calibrate_measures_stores_and_shows(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))
    code, text = call(["calibrate", "--runs", "2", "--counts", "5,8", "--rates-kib", "512", "--heaps", "native",
                       "--jobs", "2"])
    assert code == 0 and has_row(text, "glibc", "8", "512")
    err = capsys.readouterr().err
    assert "4/4 workers" in err and "2 at once" in err and "wrote" in err  # progress on stderr
    cal = calibration_store.load("glibc")
    assert cal["runs"] == 2 and set(cal["floors"]) == {"5", "8"} and cal["jobs"] == 2
    assert cal["key"] == calibration_store.environment_key("glibc")
    assert cal["floors"]["8"] == 256 * KIB  # a 512 KiB/iteration leak is seen at once
    code, shown = call(["calibrate", "--show"])
    assert code == 0 and has_row(shown, "glibc", "8")


def test_parallel_controls_read_as_sequential_ones(tmp_path, monkeypatch):
    # the controls' series do not depend on how many workers run at once: the same slopes at jobs 1 and 2
    args = dict(runs=2, iterations=[12], rates=[256 * KIB], heaps=["native"], warmup=1)
    one, _ = session.run_controls("glibc", jobs=1, **args)
    two, _ = session.run_controls("glibc", jobs=2, **args)
    for series in (one, two):
        for name in ("rss", "heap"):  # glibc's heap reading too (mallinfo2)
            fits = [stats.fit_growth(s) for s in series[name]["native"][256 * KIB]]
            assert len(fits) == 2 and all(abs(f.slope / (256 * KIB) - 1) < 0.05 for f in fits), name
            assert len(series[name]["noop"][0]) == 2


def test_a_run_without_a_fitting_calibration_calibrates_once(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))
    monkeypatch.delenv("KERASBENCH_NO_CALIBRATE")
    monkeypatch.setattr(calibration, "DEFAULT_COUNTS", (6,))  # small and quick: 2 runs, one big leak
    monkeypatch.setattr(calibration, "DEFAULT_RATES_KIB", (512,))
    monkeypatch.setattr(calibration, "AUTO_RUNS", 2)
    argv = ["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "6"]
    code, text = call(argv)
    err = capsys.readouterr().err
    assert code == 0 and "no calibration fits glibc on" in err and "calibrating glibc:" in err
    assert os.listdir(tmp_path) == [os.path.basename(calibration_store.path_for("glibc"))]  # cached
    path = calibration_store.path_for("glibc")
    assert f"resolution 256 KiB/iteration, from calibration {path} (fits glibc on" in text
    code, text = call(argv)  # the next run finds it
    assert code == 0 and "calibrating" not in capsys.readouterr().err and "from calibration" in text


def test_no_calibrate_says_why_the_default(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))
    monkeypatch.delenv("KERASBENCH_NO_CALIBRATE")
    code, text = call(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "5",
                       "--no-calibrate"])
    assert code == 0 and "calibrating" not in capsys.readouterr().err and os.listdir(tmp_path) == []
    line = next(ln for ln in text.splitlines() if ln.startswith("control × control_noop: resolution "))  # its row
    assert line.startswith("control × control_noop: resolution 128 KiB/iteration, from default (no calibration for "
                           "glibc at <= 5 iterations fits")
    assert "not calibrated: --no-calibrate" in line
    capsys.readouterr()
    out = tmp_path.parent / f"{tmp_path.name}-r.json"  # stamped as the default it is (the atlas reads the kinds)
    assert call(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "5", "--no-calibrate",
                 "--json", str(out)])[0] == 0, capsys.readouterr().err
    stamp = json.loads(out.read_text())["records"][0]["summary"]["floors_from"]
    assert stamp["rss"]["kind"] == stamp["heap"]["kind"] == "default"
    given = tmp_path.parent / f"{tmp_path.name}-g.json"
    assert call(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "5", "--floor-kib", "64",
                 "--json", str(given), "--no-calibrate"])[0] == 0
    summary = json.loads(given.read_text())["records"][0]["summary"]
    # a given floor is the margin; the resolution is still the default one (no calibration here)
    assert summary["margin_source"].startswith("given") and summary["floors_from"]["rss"]["kind"] == "default"


def test_an_allocator_that_did_not_load_is_flagged():
    from kerasbench.runtable import run_table as table
    from kerasbench.summary import allocator_check, make_record

    spec = RunSpec("control", "control_noop", allocator="tcmalloc", floor=64 * KIB)
    assert allocator_check(spec, {"allocator": "tcmalloc"})["matches"]
    assert not allocator_check(spec, {"allocator": "glibc"})["matches"]
    env = {"allocator": "glibc", "python": "3", "numpy": "2"}
    record = make_record(spec, [{"repeat": 0, "status": "skipped", "reason": "n/a", "result": None,
                                 "environment": env}], spec_floors(spec))
    assert "allocator tcmalloc requested, but the worker ran on glibc" in table([record])


def test_the_stored_calibrations_in_docs_load_and_match_the_readme():
    import pathlib

    root = pathlib.Path(__file__).resolve().parent.parent
    readme = (root / "docs" / "calibration.md").read_text()
    from kerasbench.rule import settling

    files = sorted(p for p in (root / "docs" / "calibration").glob("*.json") if p.name != settling.NAME)
    assert files and (root / "docs" / "calibration" / settling.NAME).exists()  # tests/test_settling.py checks it
    for path in files:
        cal = calibration_store.load(json.loads(path.read_text())["allocator"], str(path))
        assert cal["schema"] == calibration_store.SCHEMA and path.name == calibration_store.file_name(cal["key"])
        for row in calibration.summary_rows(cal):
            assert tuple(map(str, row)) in md_rows(readme), row


def test_asv_reads_the_allocator_from_the_environment():
    import subprocess
    import sys

    code = "import benchmarks._common as c; print(c.ALLOCATOR, c._LoopBenchmark.version.endswith('-tcmalloc'))"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, KERASBENCH_ALLOCATOR="tcmalloc")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root,
                         env=env).stdout
    assert out.split() == ["tcmalloc", "True"]


# --- the TF negative control -----------------------------------------------------------------------

def test_tf_control_false_positives_at_the_chosen_floor():
    runs = simulated_runs(noise=0.5 * KIB, hidden_below=64 * KIB)  # glibc-like: floor 32 KiB
    # a TF loop whose RSS drifts 40 KiB an iteration in half of the runs (glibc's sawtooth settling)
    runs["tf"] = {0: simulate(40 * KIB, 0.5 * KIB, runs=10, seed=7) + simulate(0, 0.5 * KIB, runs=10, seed=8)}
    r = calibration.analyze(runs, [30], RATES)["by_iterations"]["30"]
    t = r["tf_control"]
    assert r["floor"] == 32 * KIB and t["floor"] == 32 * KIB and not t["floor_is_default"]
    assert t["runs"] == 20 and t["false_positive"] == 0.5
    assert t["false_positive_by_floor"][str(64 * KIB)] == 0.0 and t["false_positive_by_floor"][str(2 * KIB)] == 0.5
    assert t["smallest_safe_floor"] == 64 * KIB
    assert r["false_positive"][str(64 * KIB)] == 0.0  # control_noop's own rate is unchanged


def test_tf_control_uses_the_default_floor_when_nothing_was_detected():
    runs = simulated_runs(noise=0.5 * KIB, hidden_below=10**9)
    runs["tf"] = {0: simulate(0, 0.5 * KIB, runs=5, seed=3)}
    t = calibration.analyze(runs, [30], RATES)["by_iterations"]["30"]["tf_control"]
    assert t["floor_is_default"] and t["floor"] == rule.DEFAULT_FLOOR and t["false_positive"] == 0.0
    assert "tf_control" not in calibration.analyze(simulated_runs(0.5 * KIB), [30], RATES)["by_iterations"]["30"]


def test_tf_control_is_a_registered_pair_with_one_model_and_one_input():
    from kerasbench import LOOPS, STRATEGIES

    loop, strategy = calibration.TF_CONTROL
    s = STRATEGIES[strategy]
    assert loop in s.applies_to and LOOPS[loop].needs_tf
    assert s.model == "reuse" and s.batch_sizes == "stable" and not s.function_in_loop and not s.keep_outputs
    assert calibration.cells_for([KIB], ["native"], tf_control=True)[-1] == ("tf", strategy, 0)


def test_calibrate_renders_the_tf_control(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))

    def fake_measure(allocator, runs, iterations, rates, heaps, warmup, progress, tf_control=False, jobs=1, python=""):
        assert tf_control
        series = simulated_runs(noise=0.5 * KIB, heaps=heaps)
        series["tf"] = {0: simulate(0, 0.5 * KIB, runs=runs, seed=5)}
        return {"rss": series}, "glibc"

    monkeypatch.setattr(session, "run_controls", fake_measure)
    monkeypatch.setattr("importlib.util.find_spec", lambda name: object())
    code, text = call(["calibrate", "--runs", "3", "--counts", "30", "--tf-control"])
    assert code == 0 and "TF negative control" in text
    assert has_row(text, "glibc", "30", "3")
    assert calibration_store.load("glibc")["report"]["by_iterations"]["30"]["tf_control"]["runs"] == 3


@pytest.mark.tf
def test_calibrate_runs_the_tf_control_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))
    code, text = call(["calibrate", "--runs", "1", "--counts", "4", "--rates-kib", "1024", "--heaps", "native",
                       "--warmup", "1", "--tf-control"])
    assert code == 0, text
    t = calibration_store.load("glibc")["report"]["by_iterations"]["4"]["tf_control"]
    assert t["runs"] == 1 and t["loop"] == "inference" and t["median_slope"] is not None


def test_an_installed_wheel_carries_the_shipped_calibration_and_every_package(tmp_path):
    """asv builds a wheel of kerasbench into each environment: no clone beside it, so its workers found no shipped
    calibration and judged every pair at the 64 KiB default floors (the whole atlas run, stop 35); the wheel also
    lacked kerasbench.commands (an installed `kerasbench` command failed to import)."""
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        setuptools = tomllib.load(f)["tool"]["setuptools"]
    on_disk = {os.path.relpath(d, root).replace(os.sep, ".")
               for d, _, names in os.walk(os.path.join(root, "kerasbench")) if "__init__.py" in names}
    assert on_disk <= set(setuptools["packages"]), on_disk - set(setuptools["packages"])
    assert setuptools["package-dir"]["kerasbench.shipped_calibration"] == "docs/calibration"
    assert setuptools["package-data"]["kerasbench.shipped_calibration"] == ["*.json"]
    assert calibration_store.shipped(root) == os.path.join(root, "docs", "calibration")  # a clone: its docs
    wheel = tmp_path / "site-packages"  # an installed wheel: the package's copy
    (wheel / "kerasbench" / "shipped_calibration").mkdir(parents=True)
    assert calibration_store.shipped(str(wheel)) == str(wheel / "kerasbench" / "shipped_calibration")
