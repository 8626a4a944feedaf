"""kerasbench triage: the bisection, the good/bad classification, release pins, and the command end to end."""

import io
import json
import math
import pathlib
import re

import pytest

from kerasbench import releases, triage
from kerasbench.cli import main
from kerasbench.errors import UsageError

from test_compare import synthetic

ROOT = pathlib.Path(__file__).resolve().parent.parent
MATRIX = str(ROOT / "asv.matrix.json")
PYPI = str(ROOT / "tests" / "fixtures" / "pypi")  # real upload times of a few TF and Keras releases
KIB = 1024


@pytest.fixture(autouse=True)
def offline_index(monkeypatch):
    monkeypatch.setenv("KERASBENCH_PYPI", PYPI)


def call(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


# ---------------------------------------------------------------- bisection on a fake version map


def run_bisect(behaviour):
    """Bisect a {version: 'good'|'bad'|'unclear'} map; returns the outcome and the versions asked, in order."""
    asked = []

    def classify(v, ends):
        asked.append(v)
        return behaviour[v]

    return triage.bisect(list(behaviour), classify), asked


def run_levels(levels, max_steps=None):
    """Bisect versions whose behaviour is a level (0 at the good end): a version is like an end of the range it is
    tried in when its level is that end's, else unclear; two versions differ when their levels do."""
    versions, asked = list(levels), []

    def classify(v, ends):
        asked.append(v)
        return {levels[ends[0]]: "good", levels[ends[1]]: "bad"}.get(levels[v], "unclear")

    def differ(a, b):
        return levels[a] != levels[b], f"{levels[a]} vs {levels[b]}"

    return triage.bisect(versions, classify, differ=differ, max_steps=max_steps), asked


@pytest.mark.parametrize("n", [2, 3, 5, 8, 17, 40])
def test_bisect_finds_every_change_point_with_the_fewest_versions(n):
    versions = [f"2.{i}.0" for i in range(n)]
    for change in range(1, n):  # the first bad version
        behaviour = {v: "good" if i < change else "bad" for i, v in enumerate(versions)}
        outcome, asked = run_bisect(behaviour)
        assert (outcome.last_good, outcome.first_bad) == (versions[change - 1], versions[change])
        assert len(asked) == len(set(asked)), "no version measured twice"
        assert len(asked) <= triage.steps_needed(n) == 2 + math.ceil(math.log2(n - 1))


def test_bisect_stops_at_a_version_like_neither_end_and_names_the_range():
    versions = ["2.12.1", "2.13.1", "2.14.1", "2.15.1", "2.16.2"]
    behaviour = dict(zip(versions, ["good", "good", "unclear", "bad", "bad"]))
    outcome, asked = run_bisect(behaviour)
    assert outcome.first_bad is None and outcome.last_good is None
    assert "2.14.1 behaves like neither end" in outcome.stopped
    assert "between 2.12.1 and 2.16.2" in outcome.stopped and outcome.bracket == ("2.12.1", "2.16.2")
    # a middle between the ends (a TF nightly triage of 2026: a Keras step, then a TF one): the two triages to run
    assert "triage each side: --good 2.12.1 --bad 2.14.1, and --good 2.14.1 --bad 2.16.2" in outcome.stopped


@pytest.mark.parametrize("n", [5, 9, 12, 17])
def test_a_version_like_neither_end_splits_the_range_and_each_step_is_found(n):
    """A change in two steps (a Keras step, then a TF one): the middle is like neither end, each half is bisected
    against its own ends within the default budget, and the answer names both steps, every version measured once."""
    versions = [f"2.{i}.0" for i in range(n)]
    for first in range(1, n - 1):
        for second in range(first + 1, n):
            levels = {v: 0 if i < first else 1 if i < second else 2 for i, v in enumerate(versions)}
            outcome, asked = run_levels(levels)
            steps = [(versions[first - 1], versions[first]), (versions[second - 1], versions[second])]
            if outcome.stopped is None:
                assert outcome.steps == steps and outcome.first_bad is None, (first, second)
                assert set(outcome.middles) <= set(versions[first:second])
            else:  # the middle tried first happened to be like an end: one step found, the other not bisected
                assert len(outcome.steps) == 1 and outcome.steps[0] in steps
            assert len(asked) == len(set(asked)) <= triage.max_steps_default(n)
            assert outcome.stopped is None or "--max-steps" not in outcome.stopped, (first, second, outcome.stopped)


def test_two_steps_answer_and_a_budget_that_stops_the_halves():
    levels = dict(zip(["2.12.1", "2.13.1", "2.14.1", "2.15.1", "2.16.2"], [0, 0, 1, 2, 2]))
    outcome, asked = run_levels(levels)
    assert outcome.steps == [("2.13.1", "2.14.1"), ("2.14.1", "2.15.1")] and outcome.middles == ["2.14.1"]
    said = triage.answer(outcome, "inference × reuse_model (growth_per_iter)")
    assert said.startswith("Answer: inference × reuse_model (growth_per_iter) changed in 2 steps")
    assert "TF 2.13.1 → 2.14.1, TF 2.14.1 → 2.15.1" in said and "2.14.1 behaves like neither 2.12.1 nor 2.16.2" in said
    assert triage.summary(outcome, "growth_per_iter")["steps"] == [["2.13.1", "2.14.1"], ["2.14.1", "2.15.1"]]
    # three measured (the ends and the middle): the halves are not bisected, and the stop says what is left to triage
    outcome, asked = run_levels(levels, max_steps=3)
    assert len(asked) == 3 and outcome.steps == [] and outcome.first_bad is None
    assert "--max-steps 3" in outcome.stopped and "--good 2.12.1 --bad 2.14.1" in outcome.stopped
    # a middle like neither end that differs from neither (too uncertain to place): said, not split
    outcome, _ = triage.bisect(list(levels), lambda v, ends: "good" if v == "2.12.1" else "bad" if v == "2.16.2"
                               else "unclear", differ=lambda a, b: (False, "unchanged")), None
    assert "differs from neither: too uncertain" in outcome.stopped and outcome.steps == []


def test_bisect_skips_a_version_the_repro_cannot_run_on_and_stops_when_none_between_runs():
    """A repro that raises on a release between the ends (an API it lacks) is skipped, as `git bisect skip`: the
    untried version nearest the middle is tried instead; when every version between the nearest good and bad ones
    fails, the change is between those two and the answer says which failed."""
    versions = ["2.12.1", "2.13.1", "2.14.1", "2.15.1", "2.16.2", "2.17.1"]
    # 2.14.1 (the middle) fails: 2.15.1, the next nearest, is tried, and the change found between it and 2.16.2
    outcome, asked = run_bisect(dict(zip(versions, ["good", "good", triage.SKIPPED, "good", "bad", "bad"])))
    assert (outcome.last_good, outcome.first_bad) == ("2.15.1", "2.16.2") and outcome.stopped is None
    assert asked[2:4] == ["2.14.1", "2.15.1"] and outcome.skipped == ["2.14.1"]
    assert len(asked) == len(set(asked))
    # the change sits where nothing runs: the nearest good and bad versions and the two that failed between them
    outcome, asked = run_bisect(dict(zip(versions, ["good", "good", triage.SKIPPED, triage.SKIPPED, "bad", "bad"])))
    assert outcome.first_bad is None and outcome.bracket == ("2.13.1", "2.16.2")
    assert outcome.stopped == "the change is between 2.13.1 and 2.16.2, and 2.14.1 and 2.15.1 between them fail to run"
    assert len(asked) == len(set(asked)) == 6


def test_bisect_with_ends_that_do_not_differ_measures_only_the_ends():
    outcome, asked = run_bisect({"2.12.1": "unclear", "2.15.1": "good", "2.21.0": "unclear"})
    assert asked == ["2.12.1"] and outcome.first_bad is None and "do not differ" in outcome.stopped


def test_bisect_works_for_a_fix_as_well_as_a_regression():
    # good newer than bad: "which release fixed it" is the same search over a reversed list
    versions = ["2.21.0", "2.18.1", "2.16.2", "2.15.1", "2.12.1"]
    outcome, _ = run_bisect(dict(zip(versions, ["good", "good", "good", "bad", "bad"])))
    assert (outcome.last_good, outcome.first_bad) == ("2.16.2", "2.15.1")


# ---------------------------------------------------------------- classification from records


def record(version, slope, seed=0):
    return synthetic(version, slope, repeats=2, n=20, seed=seed)["records"][0]


def test_classify_by_growth():
    good, bad = record("2.12.1", 0), record("2.21.0", 512 * KIB)
    assert triage.ends_differ("growth_per_iter", good, bad)[0]
    assert triage.classify("growth_per_iter", good, bad, record("2.15.1", 0, seed=3))[0] == "good"
    assert triage.classify("growth_per_iter", good, bad, record("2.16.2", 512 * KIB, seed=4))[0] == "bad"
    # past the bad end, the regression larger, is on its side of the change (the bisection goes on), and says so
    cls, why = triage.classify("growth_per_iter", good, bad, record("2.16.1", 768 * KIB, seed=5))
    assert cls == "bad" and why.startswith("like the bad end (beyond it: 15") and "of the way from the good end" in why
    # half of it lies between the ends: neither, where it lies said (the bisection stops: the change has two steps)
    cls, why = triage.classify("growth_per_iter", good, bad, record("2.17.1", 256 * KIB, seed=6), ("2.12.1", "2.21.0"))
    assert cls == "unclear" and why.startswith("between 2.12.1 and 2.21.0 (5") and "% of the way, ±" in why
    # the ends' names and the other direction: flat where the good end grows 512 is the bad end's
    assert triage.classify("growth_per_iter", bad, good, record("2.18.1", 0, seed=7))[0] == "bad"


def test_a_version_that_undoes_nearly_all_of_the_change_is_good_and_one_in_the_middle_unclear():
    good, bad = record("2.15.1", 0), record("2.16.1", 2400 * KIB, seed=1)
    near, third, two_thirds = (record("2.16.1", slope, seed=seed) for slope, seed in
                               ((150 * KIB, 2), (800 * KIB, 3), (1600 * KIB, 4)))
    cls, why = triage.classify("growth_per_iter", good, bad, near, ("TF 2.15.1", "TF 2.16.1"))
    # 6 % of the way, but +150 KiB/iteration is over the 128 KiB margin where TF 2.15.1 is flat: not like it (protocol
    # 9: a class never says more than the release's own verdict)
    assert cls == "unclear" and why.startswith("like TF 2.15.1 (") and "; but RSS grows, where TF 2.15.1 is flat" in why
    nearer = record("2.16.1", 4 * KIB, seed=2)  # 99.8 % undone, and flat: like the good end
    cls, why = triage.classify("growth_per_iter", good, bad, nearer, ("TF 2.15.1", "TF 2.16.1"))
    assert cls == "good" and why.startswith("like TF 2.15.1 (") and "% of the way to TF 2.16.1, ±" in why
    assert triage.classify("growth_per_iter", good, bad, third)[0] == "unclear"
    assert triage.classify("growth_per_iter", good, bad, two_thirds)[0] == "unclear"  # 67 ± 1 %: between, not bad


def peak_record(version, over_setup, seed):
    """A record of 8 iterations, 2 repeats, whose peak over setup is `over_setup` (plus a few MiB between repeats)."""
    import numpy as np

    from kerasbench.rule import spec_floors
    from kerasbench.runner import RunSpec
    from kerasbench.summary import summarize

    r = synthetic(version, 0, repeats=2, n=8, seed=seed)["records"][0]
    rng = np.random.default_rng(seed)
    for rep in r["repeats"]:
        result = rep["result"]
        result["setup_rss"] = result["peak_loop_rss"] - int(over_setup + rng.normal(0, 3 * 1024**2))
    spec = RunSpec(**r["spec"])
    r["summary"] = summarize(r["repeats"], spec, spec_floors(spec))
    return r


def test_a_bridge_a_few_percent_of_a_large_change_away_from_the_good_end_is_the_good_end():
    """The bridge of attribute 2.15.1 -> 2.16.1 (cnn_forward, peak_over_setup): -84 MiB from the good end, 'improved'
    against it beyond compare's noise, on a change of +2.6 GB: the good end's (3 % of the change), not 'neither'."""
    mib = 1024**2
    good, bad = peak_record("2.15.1", 396 * mib, 1), peak_record("2.16.1", 2996 * mib, 2)
    bridge = peak_record("2.16.1", 312 * mib, 3)
    from kerasbench import compare

    assert compare.judge("peak_over_setup", compare.cell_side(good, "peak_over_setup"),
                         compare.cell_side(bridge, "peak_over_setup"))[0] == "improved"
    cls, why = triage.classify("peak_over_setup", good, bad, bridge, ("2.15.1", "2.16.1"))
    assert cls == "good" and why.startswith("like 2.15.1 (-3") and "% of the way to 2.16.1, ±" in why
    middle = peak_record("2.16.1", 1700 * mib, 4)
    cls, why = triage.classify("peak_over_setup", good, bad, middle, ("2.15.1", "2.16.1"))
    assert cls == "unclear" and why.startswith("between 2.15.1 and 2.16.1 (50")


def test_equal_ends_do_not_differ():
    assert not triage.ends_differ("growth_per_iter", record("2.12.1", 0), record("2.21.0", 0, seed=1))[0]


def test_unknown_metric_lists_the_valid_ones():
    with pytest.raises(UsageError, match="Expected one of: growth_per_iter"):
        triage.check_metric("nope")


@pytest.mark.parametrize("overrides,message", [
    ({"metric": "nope"}, "metric='nope'"),
    ({"good": "2.14", "bad": "2.14.0"}, "Nothing to bisect: --good and --bad are the same release (2.14)"),
    ({"package": "keras"}, "--package keras bisects Keras releases at one TF release: give --tf VERSION too."),
    ({"tf": "2.16.2"}, "--tf fixes the TF release while --package keras bisects Keras: give --package keras too."),
    ({"loop": None}, "What to triage? Give --loop NAME and --strategy NAME, or --repro FILE."),
    ({"jobs": 0}, "Invalid value for argument `jobs`. Received: jobs=0. Expected 1 or 2."),
])
def test_a_request_is_checked_before_anything_is_made(overrides, message):
    request = {"metric": "growth_per_iter", "config": MATRIX, "good": "2.12.1", "bad": "2.21.0", "loop": "sweep",
               "package": "tensorflow", "tf": None, "jobs": 2}
    assert triage.check_request(**request) == ("growth_per_iter", MATRIX)
    with pytest.raises(UsageError) as caught:
        triage.check_request(**{**request, **overrides})
    assert message in str(caught.value)


# ---------------------------------------------------------------- releases and pins


def test_candidates_include_patch_releases_only_final_ones_in_range():
    includes = json.loads("\n".join(line for line in open(MATRIX) if not line.lstrip().startswith("//")))["include"]
    found = releases.candidates("2.14.1", "2.17.1", includes)
    assert found == ["2.14.1", "2.15.0", "2.15.1", "2.16.1", "2.16.2", "2.17.0", "2.17.1"]  # no rc, no .post1
    assert releases.candidates("2.14.1", "2.17.1", includes, patches=False) == ["2.14.1", "2.15.1", "2.16.2", "2.17.1"]
    assert releases.candidates("2.17.1", "2.14.1", includes, patches=False) == ["2.17.1", "2.16.2", "2.15.1", "2.14.1"]


def test_pins_come_from_the_matrix_or_from_the_release_dates():
    includes = json.loads("\n".join(line for line in open(MATRIX) if not line.lstrip().startswith("//")))["include"]
    assert releases.requirements_for("2.15.1", includes)["keras"] == "2.15.0"  # the matrix's own entry
    derived = releases.requirements_for("2.16.1", includes)
    assert derived["tensorflow-cpu"] == "2.16.1" and derived["keras"] == "3.0.5"  # newest Keras 3 before 2024-03-09
    assert derived["numpy"] == "1.26.4"  # the same minor's pins
    assert releases.requirements_for("2.13.0", includes)["keras"].startswith("2.13.")


@pytest.mark.parametrize("argv,message", [
    (["--good", "2.12.1", "--bad", "9.9.9", "--loop", "sweep"],
     "Unknown TF version. Received: bad='9.9.9'. Expected one of: 2.12.0"),
    (["--good", "2.12.1", "--bad", "2.21.0"], "Give --loop NAME"),
    (["--good", "2.12.1", "--bad", "2.21.0", "--loop", "nope"], "loop='nope'"),
    (["--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep", "--metric", "nope"], "metric='nope'"),
    (["--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep", "--config", "missing.json"],
     "Cannot read asv config missing.json"),
    (["--good", "2.12.1", "--bad", "2.21.0", "--repro", "missing.py"], "Cannot read repro file missing.py"),
])
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    code, out = call(["triage", "--config", MATRIX] + argv)
    err = capsys.readouterr().err
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_unreadable_index_names_the_file(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("KERASBENCH_PYPI", str(tmp_path))
    code, _ = call(["triage", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep"])
    assert code == 2 and f"Cannot read the package index {tmp_path}/tensorflow-cpu.json" in capsys.readouterr().err


# ---------------------------------------------------------------- the command, with fake environments


def test_triage_s_steps_say_how_many_are_done_of_at_most_how_many_the_time_and_the_most_left(monkeypatch, capsys):
    """One Progress for every step (before: a new one a step, its count and clock starting again, and no time at all
    on the step lines): each version measured a minute of a fake clock."""
    from kerasbench import environment, runner
    from kerasbench.commands import triage as command

    now = [1000.0]
    monkeypatch.setattr(command, "CLOCK", lambda: now[0])

    def measure(spec, progress=None):
        now[0] += 60
        version = spec.python.split("-", 1)[1]
        return record(version, 400 * KIB if releases.version_key(version) < (2, 16, 1) else 0)

    monkeypatch.setattr(environment, "python_for", lambda config, reqs, progress=None, python=None:
                        (f"python-{reqs['tensorflow-cpu']}", f"env-{reqs['tensorflow-cpu']}"))
    monkeypatch.setattr(runner, "measure", measure)
    code, out = call(["triage", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep",
                      "--strategy", "reuse_model", "--jobs", "1"])
    err = capsys.readouterr().err
    assert code == 0, err
    expected = int(re.search(r"(\d+) to measure for a change in one step", err).group(1))
    done = [line for line in err.splitlines() if line.startswith("[step ")]
    assert len(done) >= 3
    assert done[0].startswith(f"[step 1/≤{expected}] TF 2.12.1: sweep × reuse_model: ")
    assert done[0].endswith(f"(1 of ≤{expected} done, 1:00 elapsed, ≤~{expected - 1}:00 left)"), done[0]
    assert done[1].endswith(f"(2 of ≤{expected} done, 2:00 elapsed, ≤~{expected - 2}:00 left)"), done[1]
    assert done[2].startswith(f"[step 3/≤{expected}]")  # the count goes on across the steps, and so does the clock
    assert done[2].endswith(f"(3 of ≤{expected} done, 3:00 elapsed, ≤~{expected - 3}:00 left)"), done[2]
    assert f"{len(done)} of ≤{expected} done" in done[-1]


def test_triage_command_bisects_patch_releases_and_prints_evidence(monkeypatch, tmp_path, capsys):
    """Growth appears in 2.16.1 (Keras 3): every version gets an asv environment and one measurement."""
    from kerasbench import environment, runner

    made, measured = [], []

    def python_for(config, reqs, progress=None, python=None):
        version = reqs["tensorflow-cpu"]
        made.append((version, reqs["keras"]))
        progress("creating asv environment (fake)")
        return f"python-{version}", f"env-{version}"

    specs = []

    def measure(spec, progress=None):
        version = spec.python.split("-", 1)[1]
        measured.append(version)
        specs.append(spec)
        slope = 400 * KIB if releases.version_key(version) < (2, 16, 1) else 0
        return record(version, slope, seed=len(measured))

    monkeypatch.setattr(environment, "python_for", python_for)
    monkeypatch.setattr(runner, "measure", measure)
    out_json = tmp_path / "triage.json"
    code, out = call(["triage", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep",
                      "--strategy", "reuse_model", "--json", str(out_json)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "Answer: TF 2.16.1 is the first release" in out and "the last like 2.12.1 is 2.15.1" in out
    # the direction measured, which the words of the answer do not say (the atlas reads it: a settled change)
    head = out.splitlines()[0]
    assert "the last like 2.12.1 is 2.15.1. The ends: TF 2.21.0 against TF 2.12.1, improved: [" in head
    saved = json.loads(out_json.read_text())  # … and its --json keeps as data: the atlas reads it there
    assert saved["answer"]["ends"] == "improved" and saved["answer"]["text"].startswith(head.strip())
    assert saved["answer"]["alike"] is False and saved["answer"]["first_bad"] == saved["triage"]["first_bad"]
    versions = releases.candidates("2.12.1", "2.21.0", json.loads(
        "\n".join(line for line in open(MATRIX) if not line.lstrip().startswith("//")))["include"])
    assert len(measured) == len(set(measured)) <= triage.steps_needed(len(versions))
    assert dict(made)["2.16.1"] == "3.0.5"
    assert "kerasbench run --config" in out and "--tf 2.15.1" in out and "--tf 2.16.1" in out
    assert "[step 1/" in err and "TF 2.12.1" in err
    saved = json.loads(out_json.read_text())
    assert saved["triage"]["first_bad"] == "2.16.1" and len(saved["records"]) == len(measured)
    # each release measured as `run` measures a pair: the default profile's budget, looks that stop it once decided
    from kerasbench.profiles import get_profile

    default = get_profile("default")
    assert {(s.profile, s.sequential, s.budget, s.min_iterations, s.iterations, s.warmup, s.repeats) for s in specs} \
        == {("default", True, default.budget, default.min_iterations, default.max_iterations, default.warmup, 1)}
    assert "--profile default --device cpu --tf 2.15.1" in out and "--iterations" not in out
    # --iterations N: exactly N (no looks), said in the command that reproduces it
    specs.clear()
    code, out = call(["triage", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep",
                      "--strategy", "reuse_model", "--profile", "quick", "--iterations", "12", "--repeats", "2"])
    assert code == 0 and {(s.profile, s.budgeted, s.iterations, s.repeats) for s in specs} == {("quick", False, 12, 2)}
    assert "--profile quick --iterations 12 --repeats 2 --device cpu --tf 2.15.1" in out


def failed_record(spec, line):
    """The record of a repro that raised in its worker at its line 26 (runner.measure's, as measure_at_once returns
    it)."""
    tail = ["Traceback (most recent call last):", f'  File "{spec.repro}", line 26, in step', line]
    r = record("2.13.1", 0)
    r.update(status="failed", reason=f"worker exited with code 1: {line}",
             repeats=[{"status": "failed", "log_tail": tail}])
    r["spec"].update(python=spec.python, repro=spec.repro)
    return r


def assert_the_file_s_error(code, out, err, repro, line):
    """A repro that raised at an end (failed_record's): the file's error in one line naming it and its line, exit 2."""
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.strip().splitlines()[-1] == f"kerasbench: error: Repro file {repro} failed in the worker at line 26: " \
                                           f"{line}"


@pytest.mark.parametrize("at_end", [False, True])
def test_a_repro_that_raises_between_the_ends_is_skipped_and_at_an_end_is_the_file_s_error(monkeypatch, capsys,
                                                                                            at_end):
    """A report's repro that raises on one release between the ends (an API that release lacks) no longer ends the
    triage with the file's error: that release is skipped (its line says why) and the bisection goes on; at an end
    (a release the change is measured on) the failure is still the file's: one line naming it, exit 2."""
    from kerasbench import environment, runner

    repro = str(ROOT / "kerasbench" / "examples" / "reports" / "tf33009_predict.py")
    error = "AttributeError: module 'keras' has no attribute 'lifted'"
    measured = []

    def measure(spec, progress=None):
        version = spec.python.split("-", 1)[1]
        measured.append(version)
        if len(measured) == (1 if at_end else 3):  # the good end, or the first release between the ends
            return failed_record(spec, error)
        return record(version, 400 * KIB if releases.version_key(version) < (2, 16, 1) else 0, seed=len(measured))

    monkeypatch.setattr(environment, "python_for", lambda config, reqs, progress=None, python=None:
                        (f"python-{reqs['tensorflow-cpu']}", f"env-{reqs['tensorflow-cpu']}"))
    monkeypatch.setattr(runner, "measure", measure)
    code, out = call(["triage", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--repro", repro,
                      "--strategy", "reuse_model", "--jobs", "1"])
    err = capsys.readouterr().err
    if at_end:
        return assert_the_file_s_error(code, out, err, repro, error)
    assert code == 0, err
    skipped = measured[2]
    assert f"triage: TF {skipped}: skipped: Repro file {repro} failed in the worker at line 26: {error}" in err
    assert "Answer: TF 2.16.1 is the first release" in out and "the last like 2.12.1 is 2.15.1" in out
    assert len(measured) == len(set(measured))


@pytest.mark.parametrize("config", ["asv.matrix.json", "asv.gpu.json"])
def test_triage_environments_are_the_ones_asv_run_uses(config):
    """The same pins give the same asv environment name (and folder) as `asv run --config … -E`."""
    from kerasbench import asvconf, environment, install

    path = str(ROOT / config)
    includes = asvconf.includes(path)
    for entry in asvconf.matrix_entries(path):
        if entry["axis"]:  # the Keras and Python axes: tests/test_axes.py
            continue
        name, reqs = entry["name"], entry["req"]
        version = reqs.get("tensorflow-cpu") or reqs["tensorflow"]
        conf, env = environment.environment_for(path, releases.requirements_for(version, includes))
        assert env.name == name
        assert bool(install.gpu_extras(conf, reqs)) == (config == "asv.gpu.json")


def test_run_tf_runs_the_worker_with_that_environments_python(monkeypatch, tmp_path, capsys):
    """`kerasbench run --tf V` asks asv for V's environment and starts the workers with its interpreter."""
    import sys

    from kerasbench import environment

    asked = []

    def python_for(config, reqs, progress=None, python=None):
        asked.append(reqs["tensorflow-cpu"])
        return sys.executable, "env"

    monkeypatch.setattr(environment, "python_for", python_for)
    out_json = tmp_path / "run.json"
    code, _ = call(["run", "--config", MATRIX, "--tf", "2.16.1", "--loop", "control", "--strategy", "control_noop",
                    "--iterations", "3", "--warmup", "0", "--json", str(out_json)])
    assert code == 0 and asked == ["2.16.1"]
    assert json.loads(out_json.read_text())["records"][0]["spec"]["python"] == sys.executable


def test_triage_measures_both_ends_at_once_and_makes_the_next_environments_ahead(monkeypatch, capsys):
    """The ends run together (jobs 2 in their spec); each step's possible successors are made while it measures."""
    import threading
    import time

    from kerasbench import asvconf, environment, runner

    made, lock = [], threading.Lock()
    running, overlap = set(), []

    def python_for(config, reqs, progress=None, python=None):
        with lock:
            made.append(reqs["tensorflow-cpu"])
        progress("environment ready in 0 s")
        return f"python-{reqs['tensorflow-cpu']}", f"env-{reqs['tensorflow-cpu']}"

    def measure(spec, progress=None):
        version = spec.python.split("-", 1)[1]
        with lock:
            running.add(version)
            overlap.append(len(running))
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and len(made) < 3:  # the first middle is made while the ends measure
            time.sleep(0.01)
        time.sleep(0.05)
        with lock:
            running.discard(version)
        slope = 400 * KIB if releases.version_key(version) < (2, 16, 1) else 0
        r = record(version, slope, seed=len(overlap))
        r["spec"]["jobs"] = spec.jobs
        return r

    monkeypatch.setattr(environment, "python_for", python_for)
    monkeypatch.setattr(runner, "measure", measure)
    code, out = call(["triage", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep",
                      "--strategy", "reuse_model"])
    assert code == 0, capsys.readouterr().err
    assert max(overlap) == 2  # both ends at once
    versions = releases.candidates("2.12.1", "2.21.0", asvconf.includes(MATRIX))
    assert versions[(len(versions) - 1) // 2] in made[:3]  # queued with the ends
    assert len(made) == len(set(made))  # never made twice
    assert "Answer: TF 2.16.1" in out


def test_seconds_per_iter_is_never_measured_under_contention(monkeypatch, capsys):
    from kerasbench import environment, runner

    jobs = []

    def measure(spec, progress=None):
        version = spec.python.split("-", 1)[1]
        jobs.append(spec.jobs)
        return record(version, 0, seed=len(jobs))

    monkeypatch.setattr(environment, "python_for", lambda config, reqs, progress=None, python=None:
                        (f"python-{reqs['tensorflow-cpu']}", "env"))
    monkeypatch.setattr(runner, "measure", measure)
    code, _ = call(["triage", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep",
                    "--strategy", "reuse_model", "--metric", "seconds_per_iter"])
    assert code == 0 and set(jobs) == {1}


def test_triage_on_a_python_without_wheels_names_the_pythons(capsys):
    code, _ = call(["triage", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.16.2", "--loop", "sweep",
                    "--python", "3.12", "--latest-patches"])
    err = capsys.readouterr().err
    assert code == 2 and "tensorflow-cpu 2.12.1 has no wheel for Python 3.12" in err and "3.8, 3.9, 3.10, 3.11" in err


def test_run_python_needs_tf(capsys):
    code, _ = call(["run", "--loop", "control", "--strategy", "control_noop", "--python", "3.12"])
    assert code == 2 and "give --tf VERSION too" in capsys.readouterr().err


LOOK_AHEAD = """
import os, subprocess, sys, time
sys.path.insert(0, {root!r})
from kerasbench import asvconf, environment
from kerasbench.errors import UsageError

pid_file = {pid_file!r}

def python_for(config, reqs, progress=None, python=None):
    child = subprocess.Popen(["sleep", "1000"])
    with open(pid_file, "w") as f:
        f.write(str(child.pid))
    child.wait()
    raise UsageError("could not create environment (ended)")

environment.python_for = python_for
envs = environment.Ahead({matrix!r}, lambda version: {{"tensorflow-cpu": version}}, lambda version, text: None)
envs.want(["2.15.1", "2.16.2"])
for _ in range(200):
    if os.path.exists(pid_file):
        break
    time.sleep(0.05)
started = time.monotonic()
envs.stop()
print(time.monotonic() - started, envs.futures["2.16.2"].cancelled())
"""


def test_a_look_ahead_creation_is_ended_when_triage_stops(tmp_path):
    """environment.Ahead.stop() ends the installer a background creation started (asvconf removes its folder).

    In a fresh interpreter: what earlier tests left in this one (signal handlers, reaped children) must not decide it.
    """
    import os
    import subprocess
    import sys

    pid_file = tmp_path / "pid"
    code = LOOK_AHEAD.format(root=str(ROOT), pid_file=str(pid_file), matrix=MATRIX)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seconds, cancelled = done.stdout.split()
    assert float(seconds) < 5 and cancelled == "True"  # the queued one never started
    pid = int(pid_file.read_text())
    with pytest.raises(OSError):
        os.kill(pid, 0)


# ---------------------------------------------------------------- the answer, both ways; not TF's alone


def _outcome(good, bad, last_good, first_bad, pins):
    versions = [good, last_good, first_bad, bad] if good != last_good else [good, first_bad, bad]
    return triage.Outcome(versions=versions, last_good=last_good, first_bad=first_bad,
                          bracket=(last_good, first_bad), pins=pins)


def test_a_regression_names_the_first_bad_release_and_a_fix_the_release_that_fixed_it():
    what = "batch_stream × stable_batch_shapes (growth_per_iter)"
    regression = _outcome("2.16.2", "2.18.1", "2.17.1", "2.18.0", {})
    assert triage.answer(regression, what) == (f"Answer: TF 2.18.0 is the first release where {what} behaves like "
                                               "2.18.1; the last like 2.16.2 is 2.17.1.")
    fix = _outcome("2.18.1", "2.16.2", "2.18.1", "2.18.0", {})  # the good end is the newer one: an improvement
    assert triage.answer(fix, what, later="flat") == (
        f"Answer: fixed in TF 2.18.1: it is the first release where {what} behaves like 2.18.1 (the good end); the "
        "last like 2.16.2 (the bad end) is 2.18.0.")


def test_an_improvement_is_worded_fixed_only_where_the_release_found_is_flat():
    """Growing less is not fixed: a release that still grows (or is undecided) is 'improved, not fixed'."""
    what = "batch_stream × stable_batch_shapes (growth_per_iter)"
    fix = _outcome("2.18.1", "2.16.2", "2.18.1", "2.18.0", {})
    still = triage.answer(fix, what, later="grows")
    assert still.startswith("Answer: improved in TF 2.18.1, not fixed (TF 2.18.1 still grows): it is the first "
                            f"release where {what} behaves like 2.18.1") and "fixed in" not in still
    assert "not fixed (TF 2.18.1 is not decided flat (inconclusive))" in triage.answer(fix, what, later="inconclusive")
    assert "fixed in" not in triage.answer(fix, what)  # not known: not claimed
    # the release found grows less than the bad end but still grows: the rendered answer reads the record's verdicts
    grows_less, grows_more = record("2.18.1", 512 * KIB, seed=1), record("2.18.0", 2048 * KIB, seed=2)
    assert grows_less["summary"]["verdict"] == "grows"
    text = triage.render(fix, {"2.18.1": grows_less, "2.18.0": grows_more, "2.16.2": grows_more}, "growth_per_iter",
                         "batch_stream", "stable_batch_shapes", [], 60.0, 0)
    assert text.startswith("Answer: improved in TF 2.18.1, not fixed (TF 2.18.1 still grows)")
    flat = record("2.18.1", 0, seed=3)
    text = triage.render(fix, {"2.18.1": flat, "2.18.0": grows_more, "2.16.2": grows_more}, "growth_per_iter",
                         "batch_stream", "stable_batch_shapes", [], 60.0, 0)
    assert text.startswith("Answer: fixed in TF 2.18.1:")


def test_a_bracket_that_differs_in_more_than_tf_says_so_and_offers_the_attribution():
    pins = {"2.18.0": {"tensorflow-cpu": "2.18.0", "keras": "3.6.0", "numpy": "2.0.2", "pip+asv_runner": "0.3.2"},
            "2.18.1": {"tensorflow-cpu": "2.18.1", "keras": "3.9.0", "numpy": "2.0.2", "pip+asv_runner": "0.3.2"}}
    fix = _outcome("2.18.1", "2.16.2", "2.18.1", "2.18.0", pins)
    assert triage.others_differ(fix, "tensorflow-cpu") == [("keras", "3.9.0", "3.6.0")]
    record = synthetic("2.18.1", 0)["records"][0]
    text = triage.render(fix, {"2.18.1": record}, "growth_per_iter", "batch_stream", "stable_batch_shapes", [], 1.0, 0)
    assert ("Not TF's alone: the environments of 2.18.1 and 2.18.0 differ in more than TF (keras 3.9.0 -> 3.6.0), "
            "so the change may be theirs: add --attribute") in text
    said = triage.render(fix, {"2.18.1": record}, "growth_per_iter", "batch_stream", "stable_batch_shapes", [], 1.0, 0,
                         attributing=True)
    assert "the attribution below measures which package carries it" in said
    only_tf = {v: {"tensorflow-cpu": v, "keras": "3.9.0"} for v in ("2.18.0", "2.18.1")}
    assert triage.others_differ(_outcome("2.18.1", "2.16.2", "2.18.1", "2.18.0", only_tf), "tensorflow-cpu") == []


def test_a_bracket_of_a_release_and_a_nightly_does_not_offer_an_attribution_that_refuses():
    """2.21.0 then the first nightly after its cut: tensorflow-cpu and keras against tf-nightly-cpu and keras-nightly.
    `attribute` refuses such a pair (one module under two names), so the answer does not send the user to it."""
    pins = {"2.21.0": {"tensorflow-cpu": "2.21.0", "keras": "3.13.2", "numpy": "2.4.6"},
            "2.22.0.dev20260215": {"tf-nightly-cpu": "2.22.0.dev20260215", "keras-nightly": "3.14.0.dev2026021505",
                                   "numpy": "2.4.6"}}
    worse = _outcome("2.22.0.dev20260215", "2.21.0", "2.21.0", "2.22.0.dev20260215", pins)
    record = synthetic("2.21.0", 0)["records"][0]
    text = triage.render(worse, {"2.22.0.dev20260215": record}, "growth_per_iter", "inference", "clear_session", [],
                         1.0, 0)
    assert "Not TF's alone" in text and "add --attribute" not in text and "kerasbench attribute" not in text, text
    assert ("attribute cannot take this bracket apart (a release against a nightly, or two builds: tensorflow-cpu "
            "against tf-nightly-cpu, keras against keras-nightly; one module under two names)") in text


def test_the_bisected_package_under_its_nightly_name_is_not_another_package():
    """A keras-nightly bisection moves only keras-nightly: not "differ in more than Keras (keras-nightly a -> b)";
    a TF nightly's bracket moves tf-nightly-cpu (the bisected) and keras-nightly with it (another package: said)."""
    a, b = "3.16.0.dev2026062605", "3.16.0.dev2026062705"
    keras = {v: {"tensorflow-cpu": "2.21.0", "keras-nightly": v, "numpy": "2.4.6"} for v in (a, b)}
    assert triage.others_differ(_outcome(a, "3.16.0.dev2026102704", a, b, keras), "keras") == []
    tf = {"2.22.0.dev20260426": {"tf-nightly-cpu": "2.22.0.dev20260426", "keras-nightly": "3.15.0.dev2026042605"},
          "2.22.0.dev20260427": {"tf-nightly-cpu": "2.22.0.dev20260427", "keras-nightly": "3.15.0.dev2026042705"}}
    nightly = _outcome("2.21.0", "2.22.0.dev20260905", "2.22.0.dev20260426", "2.22.0.dev20260427", tf)
    assert triage.others_differ(nightly, "tensorflow-cpu") == [("keras-nightly", "3.15.0.dev2026042605",
                                                                "3.15.0.dev2026042705")]


def test_triage_command_finds_a_change_in_two_steps(monkeypatch, capsys):
    """Growth 0, then +200 KiB/iteration from 2.15, then +600 from 2.18: a middle release is like neither end, each
    half is bisected against its own ends (no second triage to run), the answer names both steps, and the reproduce
    commands each step's releases."""
    from kerasbench import environment, runner

    def slope(version):
        key = releases.version_key(version)
        return 0 if key < (2, 15) else 200 * KIB if key < (2, 18) else 600 * KIB

    monkeypatch.setattr(environment, "python_for", lambda config, reqs, progress=None, python=None:
                        (f"python-{reqs['tensorflow-cpu']}", f"env-{reqs['tensorflow-cpu']}"))
    monkeypatch.setattr(runner, "measure", lambda spec, progress=None: record(
        spec.python.split("-", 1)[1], slope(spec.python.split("-", 1)[1]), seed=len(spec.python)))
    code, out = call(["triage", "--config", MATRIX, "--good", "2.12.1", "--bad", "2.21.0", "--loop", "sweep",
                      "--strategy", "reuse_model", "--jobs", "1", "--latest-patches"])
    assert code == 0, capsys.readouterr().err
    head = out.splitlines()[0]
    assert "changed in 2 steps" in head, out
    assert "TF 2.14.1 → 2.15.1" in head and "TF 2.17.1 → 2.18.1" in head, head
    assert "like 2.1" in out  # a version tried in a half is classed against that half's ends
    reproduce = out.split("Reproduce:")[1]
    assert all(f"--tf {v}" in reproduce for v in ("2.14.1", "2.15.1", "2.17.1", "2.18.1")), reproduce


def test_a_release_whose_verdict_differs_from_both_ends_is_like_neither():
    """Both ends grow (by different amounts, the change a size); a release between that is flat is not "beyond"
    one of them (the scale alone said so of TF 2.16.1 between 2.14.1 and 2.21.0 in tf61791's triage): like neither,
    so the range is split there and each half bisected."""
    good, bad = record("2.21.0", 3800 * KIB), record("2.14.1", 2600 * KIB, seed=1)
    cls, why = triage.classify("growth_per_iter", good, bad, record("2.16.1", 0, seed=2), ("TF 2.21.0", "TF 2.14.1"))
    assert cls == "unclear" and why.startswith("like neither end: RSS flat, where TF 2.21.0 and TF 2.14.1 both read "
                                               "grows"), why
    assert triage.classify("growth_per_iter", good, bad, record("2.17.1", 3800 * KIB, seed=3))[0] == "good"
