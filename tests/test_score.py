"""kerasbench score: a profile's verdicts against long reference runs, on synthetic records with known answers."""

import copy
import json
import pathlib

import numpy as np
import pytest

from kerasbench import score
from kerasbench.loading import load_records
from kerasbench.summary import summarize
from kerasbench.runner import RunSpec
from kerasbench.rule import spec_floors
from test_compare import call, payload

KIB, MIB = 1024, 1024**2


def record(strategy, rss, heap, version="2.21.0", repeats=1, floor=None, seed=0):
    """A record of the fixture's pair shape whose repeats have these RSS and heap series (functions of n, rng)."""
    data = payload()
    template = data["records"][0]
    out = copy.deepcopy(template)
    out["strategy"], out["environment"]["tensorflow"] = strategy, version
    out["repeats"] = []
    rng = np.random.default_rng(seed)
    for r in range(repeats):
        rep = copy.deepcopy(template["repeats"][0])
        rss_series, heap_series = [int(v) for v in rss(rng)], [int(v) for v in heap(rng)]
        n = len(rss_series)
        rep["repeat"] = r
        rep["result"]["series"] = {"rss": rss_series, "heap": heap_series, "seconds": [0.01] * n,
                                   "train_traces": [2] * n, "predict_traces": [0] * n, "function_traces": [0] * n}
        rep["result"].update(iterations_done=n, baseline_rss=rss_series[0], peak_loop_rss=max(rss_series),
                             final_rss=rss_series[-1], heap_baseline=heap_series[0], heap_final=heap_series[-1],
                             heap_peak=max(heap_series), heap_source="fake", heap_unavailable=None)
        out["repeats"].append(rep)
    out["spec"].update(strategy=strategy, iterations=n, repeats=repeats, warmup=2, floor=floor,
                       floor_source="given" if floor else "")
    spec = RunSpec(**{k: v for k, v in out["spec"].items() if k in RunSpec.__dataclass_fields__})
    out["summary"] = summarize(out["repeats"], spec, spec_floors(spec))
    return out


def flat(n, level=500 * MIB, noise=0):
    return lambda rng: level + rng.normal(0, noise, n) if noise else [level] * n


def line(n, slope, level=500 * MIB, noise=16 * KIB):
    return lambda rng: level + slope * np.arange(n) + rng.normal(0, noise, n)


def save(tmp_path, name, records):
    path = tmp_path / name
    path.write_text(json.dumps({"schema": 1, "records": records}))
    return str(path)


@pytest.fixture
def files(tmp_path):
    floor = 64 * KIB
    reference = [record("reuse_model", flat(300, noise=8 * KIB), flat(300, 100 * MIB), floor=floor),
                 record("clear_session", line(300, 256 * KIB), line(300, 256 * KIB, 100 * MIB, 256), floor=floor),
                 record("release_outputs", flat(300), line(300, 128 * KIB, 100 * MIB, 64), floor=floor),
                 record("keep_outputs", flat(300), flat(300, 100 * MIB), floor=floor)]
    scored = [record("reuse_model", flat(20, noise=8 * KIB), flat(20, 100 * MIB), floor=floor),  # agrees
              record("clear_session", line(20, 256 * KIB), line(20, 256 * KIB, 100 * MIB, 256), floor=floor),
              # a heap leak the short run missed: flat / flat against flat / leak
              record("release_outputs", flat(20), flat(20, 100 * MIB), floor=floor),
              # a step in the second half: the short run cannot tell it from a leak and says so
              record("keep_outputs", lambda rng: [500 * MIB] * 13 + [520 * MIB] * 7, flat(20, 100 * MIB),
                     floor=floor)]
    return save(tmp_path, "ref.json", reference), save(tmp_path, "scored.json", scored), scored


def test_the_matrices_count_each_pair_and_the_disagreements_say_why(files):
    ref, scored, records = files
    result = score.score(*score.load([scored], [ref]))
    assert len(result["pairs"]) == 4
    kinds = {r["strategy"]: (r["reference"]["kind"], r["scored"]["kind"]) for r in result["pairs"]}
    assert kinds["reuse_model"] == ("flat", "flat") and kinds["clear_session"] == ("leak", "leak")
    assert kinds["release_outputs"] == ("leak", "flat")
    assert result["kind"]["leak"]["flat"] == 1 and result["kind"]["leak"]["leak"] == 1
    step = next(r for r in result["pairs"] if r["strategy"] == "keep_outputs")
    assert step["scored"]["verdict"] == "inconclusive" and step["scored"]["kind"] == "step"  # judged again: a step
    assert result["agreement"]["verdict"] == 0.75 and result["false_alarms"] == 0
    text = score.text(result)
    assert "agreement 75% of 4 pairs" in text and "pairs that disagree (2)" in text
    assert "one step of +20480 KiB at iteration 13" in text
    [scored_line] = [x for x in text.splitlines() if "one step of" in x]
    assert scored_line.lstrip().startswith("scored")  # each side's why on its own line, never the other's


def test_a_reference_is_judged_against_the_margin_of_the_verdict_it_checks(tmp_path):
    # 160 KiB/iteration: a long run against a margin of 96 KiB grows; a short one against 512 KiB says flat, which is
    # true of that margin: the long run answers the scored record's question, at its own count's resolution
    ref_record = record("reuse_model", line(300, 160 * KIB, noise=4 * KIB), flat(300, 100 * MIB), floor=96 * KIB)
    ref = save(tmp_path, "ref.json", [ref_record])
    short = save(tmp_path, "short.json", [record("reuse_model", line(12, 160 * KIB, noise=4 * KIB),
                                                 flat(12, 100 * MIB), floor=512 * KIB)])
    [pair] = score.score(*score.load([short], [ref]))["pairs"]
    assert score.rejudged(ref_record)["verdict"] == "grows"  # against its own margin
    assert (pair["reference"]["verdict"], pair["scored"]["verdict"]) == ("flat", "flat")  # against the scored one


def test_a_reference_that_cannot_decide_is_shown_not_scored_in_the_decided_share(tmp_path):
    def split(n):  # the long run's two repeats disagree: the first grows 256 KiB/iteration, the second is flat
        calls = iter([line(n, 256 * KIB), flat(n)])
        return lambda rng: next(calls)(rng)

    ref = save(tmp_path, "ref.json", [
        record("reuse_model", split(300), flat(300, 100 * MIB), repeats=2, floor=64 * KIB),
        record("keep_outputs", flat(300), flat(300, 100 * MIB), repeats=2, floor=64 * KIB)])
    short = save(tmp_path, "s.json", [record("reuse_model", line(20, 256 * KIB), flat(20, 100 * MIB), floor=64 * KIB),
                                      record("keep_outputs", flat(20), flat(20, 100 * MIB), floor=64 * KIB)])
    result = score.score(*score.load([short], [ref]))
    undecided = next(r for r in result["pairs"] if r["strategy"] == "reuse_model")
    assert undecided["reference"]["verdict"] == "inconclusive" and "repeats disagree" in undecided["reference"]["why"]
    assert undecided["scored"]["verdict"] == "grows" and not undecided["agree_verdict"]
    assert result["agreement"]["verdict"] == 0.5  # of every pair: the undecided one counts against
    assert result["decided"]["verdict"] == 1 and result["agreement_decided"]["verdict"] == 1.0  # of the decided one
    assert result["false_alarms"] == 0
    text = score.text(result)
    assert "agreement 50% of 2 pairs; 100% of the 1 the reference decides (1 it does not: inconclusive)" in text


def test_a_false_alarm_is_counted(tmp_path):
    ref = save(tmp_path, "ref.json", [record("reuse_model", flat(300), flat(300, 100 * MIB), floor=64 * KIB)])
    alarm = record("reuse_model", line(20, 256 * KIB), flat(20, 100 * MIB), floor=64 * KIB)
    result = score.score(*score.load([save(tmp_path, "s.json", [alarm])], [ref]))
    assert result["false_alarms"] == 1 and "FALSE ALARM" in score.text(result)


def test_the_reference_answers_the_scored_records_question_its_margin(tmp_path):
    # the long run keeps 3 KiB/iteration of heap: a leak against its own given margin of 1 KiB, flat against the
    # scored record's 64 KiB; the scored record claims +256 KiB/iteration of RSS over 64: a false alarm
    heap = line(300, 3 * KIB, 100 * MIB, 256)
    ref = save(tmp_path, "ref.json", [record("reuse_model", flat(300), heap, floor=KIB)])
    short = record("reuse_model", line(20, 256 * KIB), flat(20, 100 * MIB), floor=64 * KIB)
    result = score.score(*score.load([save(tmp_path, "s.json", [short])], [ref]))
    [pair] = result["pairs"]
    assert (pair["reference"]["verdict"], pair["reference"]["kind"]) == ("flat", "flat")  # at the scored margin
    assert (result["false_alarms"], result["overstated"]) == (1, 0)
    assert "FALSE ALARM" in score.text(result)


def test_the_command_prints_and_writes_the_scoring(files, tmp_path):
    ref, scored, _ = files
    out_json = tmp_path / "score.json"
    code, out = call(["score", scored, "--reference", ref, "--json", str(out_json), "--top", "1"])
    assert code == 0 and "RSS verdict: reference (rows) vs scored (columns)" in out
    assert "… and 1 more" in out and json.loads(out_json.read_text())["agreement"]["verdict"] == 0.75


def test_pairs_on_one_side_only_are_counted_not_scored(files, tmp_path):
    ref, _, records = files
    other = save(tmp_path, "other.json", [record("reuse_model", flat(20), flat(20, 100 * MIB), version="2.12.1")])
    result = score.score(*score.load([other], [ref]))
    assert result["pairs"] == [] and len(result["unmatched"]["reference only"]) == 4
    assert "1 pair(s) scored only (not scored)" in score.text(result)


def test_a_replay_stops_where_the_profiles_looks_would_and_scores_what_its_rules_say(tmp_path):
    # long runs at 10 ms an iteration: a leak, and nothing; default looks from 8 iterations once 3 s of loop are spent
    ref = save(tmp_path, "ref.json", [
        record("clear_session", line(600, 256 * KIB), line(600, 256 * KIB, 100 * MIB, 256), repeats=2),
        record("reuse_model", flat(600, noise=8 * KIB), flat(600, 100 * MIB), repeats=2)])
    loaded = load_records([ref])
    replayed = {r["strategy"]: r for r, _, _ in score.replay(loaded, "default", 1)}
    leak = replayed["clear_session"]["repeats"][0]["result"]
    # the leak: the first look once RSS grew 32 MiB over its baseline (rule.LOOK_GROWTH: 130 readings of 256 KiB,
    # 1.3 s), before 3 s are spent; it plans from there, ×1.5: 130, 195 (protocol 8 looked first at 3 s: 301, 452)
    assert leak["stop_reason"] == "decided" and leak["iterations_done"] == 195
    assert (leak["looks"], leak["planned_last"]) == (2, 3000)  # 20 s at 10 ms from 1.3 s: 2,000 iterations, ×1.5
    assert len(leak["series"]["rss"]) == 195 and replayed["clear_session"]["spec"]["profile"] == "default"
    nothing = replayed["reuse_model"]["repeats"][0]["result"]  # no growth: the first look once 3 s are spent
    assert (nothing["stop_reason"], nothing["iterations_done"]) == ("decided", 301)
    result = score.score(score.replay(loaded, "default", 0), loaded)
    assert result["agreement"] == {"verdict": 1.0, "kind": 1.0} and result["false_alarms"] == 0
    code, out = call(["score", "--replay", "quick", "--reference", ref])
    assert code == 0 and out.count("replayed on the reference's repeat") == 2 and "agreement 100% of 2" in out


@pytest.mark.parametrize("argv,needle", [
    (["score", "/nonexistent.json", "--reference", "/nonexistent.json"], "no such file"),
    (["score", "x.json"], "--reference"),
    (["score", "--reference", "x.json"], "--replay"),
    (["score", "x.json", "--replay", "quick", "--reference", "x.json"], "one of them"),
    (["score", "--replay", "nosuch", "--reference", "x.json"], "quick"),
])
def test_bad_input_is_one_line_exit_2(argv, needle, capsys):
    code, _ = call(argv)
    err = capsys.readouterr().err
    assert code == 2 and needle in err and "Traceback" not in err


def test_the_shipped_references_load_and_say_how_they_were_made():
    folder = pathlib.Path(__file__).resolve().parents[1] / "docs" / "reference"
    readme = (folder / "README.md").read_text()
    files = sorted(folder.glob("*.json"))
    assert files
    for path in files:
        reference = load_records([str(path)])
        version = path.stem.removeprefix("tf-")
        assert {v for _, _, v in reference} == {version}, path.name  # one release per file, named by it
        records = [r for r, _, _ in reference]
        assert all(r["spec"]["iterations"] >= 150 and r["spec"]["repeats"] == 2 for r in records
                   if r["strategy"] != "process_isolation" and r["status"] == "ok"), path.name  # the reference profile
        assert path.name in readme and "kerasbench run" in readme, path.name  # the command that made it
    for path in sorted((folder / "protocol8").glob("*.json")):  # re-made under protocol 8: stamped so, and said
        records = [r for r, _, _ in load_records([str(path)])]
        assert records and {r["summary"]["protocol"] for r in records} == {8}, path.name
        assert f"protocol8/{path.name}" in readme, path.name


def test_an_atlas_is_scored_as_shown_its_stored_labels_at_its_stored_floors(tmp_path):
    # the long run leaks 160 KiB/iteration of RSS; an atlas cell judged at 256 KiB (an older protocol's floor, the
    # heap floor not stored, no margin) shows it flat. Scored as shown: right at 256 KiB, wrong against the long run's
    # own 96 KiB, and the cell's label is the one the page shows, not one judged again from a series
    from kerasbench import atlas, compare

    ref = save(tmp_path, "ref.json", [record("reuse_model", line(300, 160 * KIB, noise=4 * KIB), flat(300, 100 * MIB),
                                             floor=96 * KIB)])
    cell = record("reuse_model", line(20, 256 * KIB), flat(20, 100 * MIB), floor=128 * KIB)
    cell["summary"].update(verdict="flat", growth_kind="flat", heap_verdict="flat", floor=256 * KIB,
                           floors_from={"rss": {"kind": "default"}, "heap": {"kind": "default"}})
    for key in ("heap_floor", "margin", "heap_margin", "margin_source", "needed", "heap_needed"):
        cell["summary"].pop(key, None)
    groups = compare.group([(cell, "x.json", "2.21.0")])
    path = tmp_path / "atlas.json"
    path.write_text(json.dumps(atlas.data(groups)))
    from kerasbench.commands.score import load

    scored, _ = load([str(path)], [ref])
    assert not score.has_series(scored[0][0]) and score.as_shown(scored[0][0])["heap_floor"] == 256 * KIB
    result = score.score(*load([str(path)], [ref]))
    [pair] = result["pairs"]
    assert pair["as_shown"] and (pair["scored"]["verdict"], pair["scored"]["kind"]) == ("flat", "flat")
    assert pair["reference"]["verdict"] == "flat" and pair["reference"]["own"]["verdict"] == "grows"
    assert result["agreement"]["verdict"] == 1.0 and result["agreement_own"]["verdict"] == 0.0
    text = score.text(result)
    assert "1 of 1 pair(s) scored as shown" in text and "RSS verdict 0%, what grew 0%" in text
    # a run's records are judged again: the same cell's series, kept, says grows
    assert score.score(*score.load([save(tmp_path, "run.json", [cell])], [ref]))["pairs"][0]["scored"]["verdict"] \
        == "grows"


def ramp(n, fast, slow, until=12, level=500 * MIB, noise=16 * KIB):
    """RSS that grows `fast` bytes an iteration for `until` iterations, then `slow`: a warm-up longer than a short
    run."""
    steps = np.array([fast if i < until else slow for i in range(n)])
    return lambda rng: level + np.concatenate([[0], np.cumsum(steps[:-1])]) + rng.normal(0, noise, n)


def test_a_right_verdict_with_the_wrong_slope_is_listed_with_its_factor(tmp_path):
    """Both sides read grows; one short run measured only a 12-iteration ramp of 4 MiB/iteration (×16 the long run's
    256 KiB), the other the steady rate: the first is listed off by ×16, the second counted within."""
    heap = line(300, 256 * KIB, 100 * MIB, 256)
    ref = save(tmp_path, "ref.json", [record("clear_session", ramp(300, 4 * MIB, 256 * KIB), heap, floor=64 * KIB),
                                      record("reuse_model", line(300, 256 * KIB), heap, floor=64 * KIB)])
    short = [record("clear_session", ramp(12, 4 * MIB, 256 * KIB), line(12, 256 * KIB, 100 * MIB, 256),
                    floor=64 * KIB),
             record("reuse_model", line(20, 256 * KIB), line(20, 256 * KIB, 100 * MIB, 256), floor=64 * KIB)]
    result = score.score(*score.load([save(tmp_path, "s.json", short)], [ref]))
    found = result["slopes"]
    assert (found["pairs"], found["within"]) == (2, 1), found
    [off] = found["off"]
    assert off["strategy"] == "clear_session" and off["scored_measured"] == [12]
    # 4 MiB over the long run's 256 KiB: its own 12-iteration ramp is its warm-up, cut by the rule
    assert off["ratio"] == pytest.approx(16, rel=0.05), off
    text = score.text(result)
    assert "RSS slopes of the 2 pair(s) both read grows: scored / reference, median ×8.50; within ×1.5 either " \
           "way: 1 of 2" in text
    assert "× clear_session: ×16.00 (+4095.0 KiB/it over n=12, reference +256.0 over n=300)" in text
    assert "× reuse_model: ×" not in text  # within: counted, not listed


def test_no_slope_line_where_nothing_grows_on_both_sides(tmp_path):
    ref = save(tmp_path, "ref.json", [record("reuse_model", flat(300), flat(300, 100 * MIB), floor=64 * KIB)])
    same = save(tmp_path, "s.json", [record("reuse_model", flat(20), flat(20, 100 * MIB), floor=64 * KIB)])
    result = score.score(*score.load([same], [ref]))
    assert result["slopes"]["pairs"] == 0 and "RSS slopes" not in score.text(result)
