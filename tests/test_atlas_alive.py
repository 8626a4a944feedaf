"""The atlas, alive (issue #42): the merge job publishes it with this run's release columns and a column per nightly
day kept in the history, each as it was measured (its protocol and floors stamps), within a size budget.

The chain (tests/test_chain.py's stand-in of the runner, tests/gha.py) over two nights; the nightly columns' keeping
rule (kept_days) and the budget (check_budget) on their own."""

import json
import os
import re
import shutil

import pytest

import gha
from kerasbench.cli import main
from kerasbench.commands import atlas as atlas_command
from test_chain import FIXTURES, Runner, _git, _night, _relabelled

yaml = pytest.importorskip("yaml")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE_ENV = {"2.12.1": "tensorflow-cpu2.12.1", "2.20.0": "tensorflow-cpu2.20.0"}


@pytest.fixture(scope="module")
def workflow():
    with open(os.path.join(ROOT, ".github", "workflows", "benchmarks.yml")) as f:
        return yaml.safe_load(f)


def _stamped(path, calibration, protocol=None):
    """A records file's records stamped as judged with floors from `calibration` (and by `protocol`, if given)."""
    data = json.loads(path.read_text())
    for record in data["records"]:
        record["summary"]["floors_from"] = {"rss": {"kind": "calibration", "file": calibration}, "heap": None}
        if protocol is not None:
            record["summary"]["protocol"] = protocol
    path.write_text(json.dumps(data))


def _columns(site):
    return _columns_of(site / "atlas")


def _columns_of(folder):
    with open(folder / "atlas.json") as f:
        payload = json.load(f)
    return {c["version"]: c for c in payload["columns"]}, payload


def _stamps(column):
    """Each cell's protocol, floors stamp (kept once in the column, named by index), verdict and slope."""
    return {(c["loop"], c["strategy"]): (c["summary"].get("protocol"), column["floors"][c["floors"]] if "floors" in c
                                         else None, c["summary"].get("verdict"), c["summary"].get("growth_per_iter"))
            for c in column["cells"]}


def test_each_night_adds_its_nightly_column_and_keeps_the_older_ones_as_measured(workflow, tmp_path, monkeypatch):
    """Night 1: the releases of the run and nightly day 1 (its floors from one calibration). Night 2, with another
    calibration: day 2 added, read against day 1, and day 1's column as it was (its stamps, verdicts and slopes).
    (One protocol over both nights: the nightlies.html step judges days of an older protocol again, --rejudge; the
    atlas' columns of two protocols are test_columns_of_two_protocols_keep_their_own_stamps'.)"""
    releases = {env: _relabelled(tmp_path, f"{tf}.json", FIXTURES / ("tf212.json" if tf == "2.12.1" else "tf221.json"),
                                 tensorflow=tf)
                for tf, env in RELEASE_ENV.items()}
    runner = Runner(tmp_path, {"default": str(FIXTURES / "tf221.json"), **releases})
    real_nightly = __import__("test_chain")._nightly_records

    def nightly_records(runner_, day, source):  # the night's nightly as `kerasbench run --tf nightly` writes it
        real_nightly(runner_, day, source)
        _stamped(runner_.tmp / "nightly-run.json", f"cal-{day}.json")

    monkeypatch.setattr("test_chain._nightly_records", nightly_records)
    _, jobs, merge = _night(runner, workflow, ",".join(RELEASE_ENV), day="2026-10-26")
    assert sorted(e["label"] for e in jobs) == sorted(RELEASE_ENV)
    site = runner.artifacts / "github-pages"
    columns, payload = _columns(site)
    assert list(columns) == ["2.12.1", "2.20.0", "2.23.0-dev20261026"], merge.transcript()
    assert "with 1 nightly column(s) of history/nightly" in merge.transcript()
    day1 = _stamps(columns["2.23.0-dev20261026"])
    assert {(s[0], json.dumps(s[1])) for s in day1.values()} == {
        (None, json.dumps({"rss": {"kind": "calibration", "file": "cal-2026-10-26.json"}, "heap": None}))}
    assert {s[0] for s in _stamps(columns["2.20.0"]).values()} == {None}  # the releases: unstamped, as measured
    page = (site / "atlas" / "index.html").read_text(encoding="utf-8")
    assert "2.23.0-dev20261026" in page and "cal-2026-10-26.json" in page
    # how far to trust a cell: the long runs of the one release of docs/reference/protocol8 the run measured
    trust = re.search(r'<div class="trust">.*?</div>', page, re.S)
    assert trust and "TF 2.12.1: " in trust.group(0) and "(tf-2.12.1.json: a median" in trust.group(0), page[:2000]
    assert "TF 2.21.0" not in trust.group(0)  # not measured by this run: passed over, not refused

    # night 2: a new commit, another nightly (the release fixture's 2.12.1 records as the nightly's: it changes)
    _git(runner.source, "commit", "-q", "--allow-empty", "-m", "another day")
    _git(runner.source, "push", "-q", "origin", "HEAD:refs/heads/main")
    shutil.rmtree(runner.artifacts)
    runner.artifacts.mkdir()
    _, _, merge2 = _night(runner, workflow, ",".join(RELEASE_ENV), day="2026-10-27",
                          nightly_source=FIXTURES / "tf212.json")
    columns2, payload2 = _columns(runner.artifacts / "github-pages")
    assert list(columns2) == ["2.12.1", "2.20.0", "2.23.0-dev20261026", "2.23.0-dev20261027"], merge2.transcript()
    assert _stamps(columns2["2.23.0-dev20261026"]) == day1  # day 1 intact: protocol, floors, verdicts, slopes
    assert {s[1]["rss"]["file"] for s in _stamps(columns2["2.23.0-dev20261027"]).values()} == {"cal-2026-10-27.json"}
    assert _stamps(columns2["2.20.0"]) == _stamps(columns["2.20.0"])
    page2 = (runner.artifacts / "github-pages" / "atlas" / "index.html").read_text(encoding="utf-8")
    assert "cal-2026-10-26.json" in page2 and "cal-2026-10-27.json" in page2
    assert "vs 2.23.0-dev20261026" in page2  # day 2 read against day 1


def test_each_night_answers_its_changes_within_its_budget_and_keeps_the_answers_in_the_history(workflow, tmp_path):
    """Night 1 with no budget (vars.KERASBENCH_ANSWER_MINUTES 0): the page lists its changes' commands, none run.
    Their answers then stand in the history branch (answers/answers.json), as earlier nights leave them; night 2
    (the same nightly on the next day: no new change) with a budget of 60 minutes answers the newest nightly's
    changes, then the rest: nothing left to run, each answer on the page and kept in the history."""
    from kerasbench import answers, atlas

    releases = {env: _relabelled(tmp_path, f"{tf}.json", FIXTURES / ("tf212.json" if tf == "2.12.1" else "tf221.json"),
                                 tensorflow=tf)
                for tf, env in RELEASE_ENV.items()}
    runner = Runner(tmp_path, {"default": str(FIXTURES / "tf221.json"), **releases})
    _, _, merge = _night(runner, workflow, ",".join(RELEASE_ENV), day="2026-10-26")
    assert "command(s) answer the atlas's changes" not in merge.transcript()  # answer_all's first line: not run
    asked = atlas.questions(atlas.load([str(runner.artifacts / "github-pages" / "atlas" / atlas.DATA)]))
    assert asked  # 2.12.1 → 2.20.0 changes

    history = tmp_path / "history-edit"
    _git(tmp_path, "clone", "-q", "--branch", "benchmark-results", str(runner.remote), str(history))
    (history / "answers").mkdir()
    (history / "answers" / answers.FILE).write_text(json.dumps({
        "schema": answers.SCHEMA, "version": answers.VERSION, "answers": {
            q.command: {"question": q.data(), "what": q.what, "result": answers.result(f"Answer: known answer {i}"),
                        "rc": 0, "seconds": 60.0 + i, "changes": list(q.changes)} for i, q in enumerate(asked)}}))
    _git(history, "add", "answers")
    _git(history, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "answers of earlier nights")
    _git(history, "push", "-q", "origin", "HEAD:refs/heads/benchmark-results")

    _git(runner.source, "commit", "-q", "--allow-empty", "-m", "another day")
    _git(runner.source, "push", "-q", "origin", "HEAD:refs/heads/main")
    shutil.rmtree(runner.artifacts)
    runner.artifacts.mkdir()
    _, _, merge2 = _night(runner, workflow, ",".join(RELEASE_ENV), day="2026-10-27", answer_minutes="60")
    said = merge2.transcript()
    # first the newest nightly's changes (none: day 2 reads as day 1), then all of them, every one answered
    assert "0 command(s) answer the atlas's changes: 0 answered in .asv/html/atlas/answers.json, 0 to run" in said
    assert (f"{len(asked)} command(s) answer the atlas's changes: {len(asked)} answered in "
            f".asv/html/atlas/answers.json, 0 to run") in said
    page = (runner.artifacts / "github-pages" / "atlas" / "index.html").read_text(encoding="utf-8")
    assert all(f"known answer {i}" in page for i in range(len(asked)))
    _git(history, "pull", "-q")
    kept = json.loads((history / "answers" / answers.FILE).read_text())["answers"]
    assert sorted(kept) == sorted(q.command for q in asked)


def test_columns_of_two_protocols_keep_their_own_stamps(tmp_path):
    """A nightly judged by protocol 7 beside one of protocol 8 and unstamped releases: each column as measured (not
    re-judged, not refused), the page naming the three rules; one column of two protocols is still refused."""
    nights = _nights(tmp_path / "nightly", ["2026-10-26", "2026-10-27"])
    _stamped(nights / "2026-10-26.json", "cal-a.json", protocol=7)
    _stamped(nights / "2026-10-27.json", "cal-b.json", protocol=8)
    out = tmp_path / "out"
    assert main(["atlas", *PATHS, "--nightlies", str(nights), "--output", str(out)]) == 0
    columns, payload = _columns_of(out)
    assert payload["protocol"] == [None, 7, 8]
    assert {s[0] for s in _stamps(columns["2.23.0-dev20261026"]).values()} == {7}
    assert {s[1]["rss"]["file"] for s in _stamps(columns["2.23.0-dev20261027"]).values()} == {"cal-b.json"}
    assert {s[0] for s in _stamps(columns["2.21.0"]).values()} == {None}
    assert "judged by protocol 7, protocol 7 or older (unstamped), protocol 8." in (out / "index.html").read_text(
        encoding="utf-8")
    page = (out / "index.html").read_text(encoding="utf-8")  # the data of three rules makes the same page again
    assert main(["atlas", str(out / "atlas.json"), "--output", str(out)]) == 0
    again = (out / "index.html").read_text(encoding="utf-8")
    assert again.split(">Records: ")[0] == page.split(">Records: ")[0]  # all but the footer naming its inputs
    data = json.loads((nights / "2026-10-27.json").read_text())
    data["records"][0]["summary"]["protocol"] = 7  # one column, two rules
    (nights / "2026-10-27.json").write_text(json.dumps(data))
    assert main(["atlas", *PATHS, "--nightlies", str(nights), "--output", str(tmp_path / "b")]) == 2


@pytest.mark.parametrize("days, kept", [
    ([], []),
    (["2026-10-26"], ["2026-10-26"]),
    # the newest 14 days, and October's first day before them
    ([f"2026-10-{d:02}" for d in range(1, 32)], ["2026-10-01"] + [f"2026-10-{d:02}" for d in range(18, 32)]),
    (["2026-09-30", "2026-10-02"], ["2026-09-30", "2026-10-02"]),
])
def test_kept_days_small(days, kept):
    assert atlas_command.kept_days(days) == kept


def test_kept_days_keep_the_newest_days_and_the_first_of_each_month_before():
    import datetime

    start = datetime.date(2025, 1, 1)
    days = [str(start + datetime.timedelta(days=i)) for i in range(700) if i % 3]  # ~2 years, gaps
    kept = atlas_command.kept_days(days)
    recent = sorted(days)[-atlas_command.KEEP_DAYS:]
    assert kept[-len(recent):] == recent
    older = kept[:-len(recent)]
    assert len(older) == atlas_command.KEEP_MONTHS
    assert all(min(d for d in days if d[:7] == day[:7]) == day for day in older)  # each its month's first
    assert len({d[:7] for d in older}) == len(older) and older == sorted(older)
    # a night later: the same monthly columns (unless the oldest leaves the window), the window moved by one
    more = atlas_command.kept_days(days + ["2026-12-31"])
    assert set(older[1:]) <= set(more) and more[-1] == "2026-12-31"
    firsts = sorted({min(d for d in days if d[:7] == m) for m in {d[:7] for d in days}})
    assert atlas_command.kept_days(days, keep_days=0, keep_months=2) == firsts[-2:]
    assert atlas_command.kept_days(days, keep_days=3, keep_months=0) == sorted(days)[-3:]


def _nights(folder, days):
    """A nightlies folder: a records file per day (the 2.21.0 fixture as that day's nightly) and release.json."""
    folder.mkdir()
    (folder / "release.json").write_text("{}")  # not a column
    for day in days:
        source = json.loads((FIXTURES / "tf221.json").read_text())
        for record in source["records"]:
            record["environment"].update(tensorflow=f"2.23.0-dev{day.replace('-', '')}", nightly={"day": day})
        (folder / f"{day}.json").write_text(json.dumps(source))
    return folder


PATHS = [str(FIXTURES / "tf212.json"), str(FIXTURES / "tf221.json")]


def _sizes(folder):
    return tuple(os.path.getsize(folder / name) for name in ("index.html", "atlas.json"))


def test_over_the_budget_the_oldest_nightly_columns_are_left_out_until_it_fits(tmp_path, capsys, monkeypatch):
    one = _nights(tmp_path / "one", ["2026-10-28"])
    three = _nights(tmp_path / "three", ["2026-10-26", "2026-10-27", "2026-10-28"])
    assert main(["atlas", *PATHS, "--nightlies", str(one), "--output", str(tmp_path / "a")]) == 0
    page, data = _sizes(tmp_path / "a")
    assert main(["atlas", *PATHS, "--nightlies", str(three), "--output", str(tmp_path / "b")]) == 0
    assert _sizes(tmp_path / "b") > (page, data)
    capsys.readouterr()
    monkeypatch.setattr(atlas_command, "PAGE_BUDGET", page + 200)  # the newest night fits, two more do not
    assert main(["atlas", *PATHS, "--nightlies", str(three), "--output", str(tmp_path / "c")]) == 0
    said = capsys.readouterr().out
    assert "with 1 nightly column(s)" in said and "2 oldest nightly column(s) left out to fit the size budget" in said
    with open(tmp_path / "c" / "atlas.json") as f:
        assert [c["version"] for c in json.load(f)["columns"]] == ["2.12.1", "2.21.0", "2.23.0-dev20261028"]
    assert _sizes(tmp_path / "c")[0] <= page + 200


def test_the_budget_fails_with_one_line_naming_the_file_and_writes_nothing(tmp_path, capsys, monkeypatch):
    nights = _nights(tmp_path / "nightly", ["2026-10-26"])
    assert main(["atlas", *PATHS, "--nightlies", str(nights), "--output", str(tmp_path / "a")]) == 0
    page, data = _sizes(tmp_path / "a")
    assert page < atlas_command.PAGE_BUDGET and data < atlas_command.DATA_BUDGET
    capsys.readouterr()
    monkeypatch.setattr(atlas_command, "DATA_BUDGET", data - 1)
    out = tmp_path / "b"
    assert main(["atlas", *PATHS, "--nightlies", str(nights), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "over its size budget" in err, err
    assert f"{out / 'atlas.json'} is {data / 2**20:.2f} MiB, its budget {(data - 1) / 2**20:.2f} MiB" in err, err
    assert "DATA_BUDGET" in err and "nothing written" in err and not out.exists()
    monkeypatch.setattr(atlas_command, "DATA_BUDGET", 2**30)
    monkeypatch.setattr(atlas_command, "PAGE_BUDGET", page - 1)
    assert main(["atlas", *PATHS, "--nightlies", str(nights), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(out / "index.html") in err and "PAGE_BUDGET" in err and err.count("\n") == 1, err
    # without --nightlies, no budget (a hand-made atlas of many releases is the maker's to size)
    assert main(["atlas", *PATHS, "--output", str(out)]) == 0


def test_the_budget_counts_the_lines_a_reference_adds(tmp_path, capsys, monkeypatch):
    """--reference with --nightlies: the page's "how far to trust a cell" lines are in the size the budget checks
    before anything is written (not found over it by the guard after writing)."""
    nights = _nights(tmp_path / "nightly", ["2026-10-26"])
    reference = os.path.join(ROOT, "docs", "reference", "protocol8", "tf-2.21.0.json")
    args = [*PATHS, "--nightlies", str(nights), "--reference", reference]
    assert main(["atlas", *args, "--output", str(tmp_path / "a")]) == 0
    assert "How far to trust a cell" in (tmp_path / "a" / "index.html").read_text(encoding="utf-8")
    page, _ = _sizes(tmp_path / "a")
    capsys.readouterr()
    monkeypatch.setattr(atlas_command, "PAGE_BUDGET", page - 1)
    out = tmp_path / "b"
    assert main(["atlas", *args, "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "PAGE_BUDGET" in err and "nothing written" in err and not out.exists(), err


def test_the_retention_s_fullest_atlas_fits_the_budget(tmp_path):
    """docs/atlas's columns (releases, their axes and nightlies) and KEEP_DAYS + KEEP_MONTHS nightly columns, each the
    newest release's cells (quiet nights: no change from one to the next), under the budgets: nothing left out."""
    with open(os.path.join(ROOT, "docs", "atlas", "atlas.json")) as f:
        payload = json.load(f)
    base = next(c for c in payload["columns"] if c["version"] == "2.21.0")
    for i in range(atlas_command.KEEP_DAYS + atlas_command.KEEP_MONTHS):
        column = json.loads(json.dumps(base))
        column["version"] = f"2.24.0-dev2027{1 + i // 28:02}{1 + i % 28:02}"
        payload["columns"].append(column)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(payload))
    out = tmp_path / "out"
    assert main(["atlas", str(path), "--output", str(out)]) == 0
    page, data = _sizes(out)
    print(f"{len(payload['columns'])} columns: index.html {page / 2**20:.2f} MiB, atlas.json {data / 2**20:.2f} MiB")
    assert page < atlas_command.PAGE_BUDGET and data < atlas_command.DATA_BUDGET


def test_the_merge_job_publishes_the_atlas_after_the_history_is_pushed(workflow):
    steps = workflow["jobs"]["merge"]["steps"]
    names = [s.get("name", "") for s in steps]
    push = next(i for i, n in enumerate(names) if n.startswith("the history, with this run"))
    alive = next(i for i, n in enumerate(names) if n.startswith("the atlas, alive"))
    answers_push = next(i for i, n in enumerate(names) if n.startswith("the answers, pushed to the history"))
    site = next(i for i, n in enumerate(names) if n.startswith("the site"))
    assert push < alive < answers_push < site  # the results pushed before the answers' budget, the answers after it
    assert steps[answers_push]["run"] == ".ci/history push history .asv"
    assert '.ci/answers "$ANSWER_MINUTES"' in steps[alive]["run"] and "history/answers" in steps[alive]["run"]
    assert "--nightlies history/nightly --output .asv/html/atlas" in steps[alive]["run"]
    assert gha.uses(steps[-2], "actions/upload-pages-artifact")


FAKE_ATLAS = """#!/usr/bin/env bash
echo "$*" >> "$CALLS"
sed -n "$(wc -l < "$CALLS")p" "$SAYS"
"""


def _answers_night(tmp_path, says, day="2026-10-27", rc=0):
    """.ci/answers with a fake `kerasbench` (call i prints line i of `says`) and a fake `uv`: the atlas calls made,
    uv's calls, what it printed, and whether the answers' environments (.asv/env) are still there."""
    import subprocess

    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "kerasbench").write_text(FAKE_ATLAS)
    (bin_ / "uv").write_text('#!/usr/bin/env bash\necho "uv $*" >> "$UV_CALLS"\n')
    for name in ("kerasbench", "uv"):
        (bin_ / name).chmod(0o755)
    (tmp_path / "says").write_text("".join(line + "\n" for line in says))
    (tmp_path / ".asv" / "env" / "0123abcd").mkdir(parents=True)
    env = dict(os.environ, PATH=f"{bin_}{os.pathsep}{os.environ['PATH']}", CALLS=str(tmp_path / "calls"),
               SAYS=str(tmp_path / "says"), UV_CALLS=str(tmp_path / "uv-calls"))
    done = subprocess.run([os.path.join(ROOT, ".ci", "answers"), "60", day, "records", "--output", "site/atlas",
                           "--config", "asv.matrix.json"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == rc, done.stderr  # .ci/answers' exit codes: 3, the disk full again with nothing run
    calls = (tmp_path / "calls").read_text().splitlines()
    uv = (tmp_path / "uv-calls").read_text().splitlines() if (tmp_path / "uv-calls").exists() else []
    return calls, uv, done.stdout, (tmp_path / ".asv" / "env").exists()


def test_a_night_s_answers_make_room_on_a_full_disk_and_go_on(tmp_path):
    """The workflow's answers (.ci/answers): the newest nightly's first, then the rest, within the minutes left; a
    stop on a full disk (answer_all's line) removes the answers' environments and uv's cache and calls again."""
    from kerasbench import answers

    full = f"    could not create environment …\n    {answers.DISK_FULL}, 3 of 5 left for another call"
    calls, uv, said, envs = _answers_night(tmp_path, [full.replace("\n", " "), "0 to run", "2 to run"])
    assert len(calls) == 3
    assert all(c.startswith("atlas records --output site/atlas --config asv.matrix.json --answer") for c in calls)
    assert all("--answer-only nightly:2026-10-27 --answer-minutes" in c for c in calls[:2])
    assert "--answer-only" not in calls[2] and "--answer-minutes 60" in calls[2]
    assert uv == ["uv cache clean"] and not envs
    assert "answers: the disk was full; removed the answers' environments (.asv/env) and uv's cache" in said
    assert "::warning::" not in said


def test_a_night_s_answers_end_when_the_disk_is_full_again_with_nothing_run(tmp_path):
    """Room made, and the next call stops before any command ran (one environment does not fit): a warning, no
    second clean, the other changes left for another night; with no nightly day, only the call over all changes."""
    from kerasbench import answers

    calls, uv, said, _ = _answers_night(tmp_path, [f"{answers.DISK_FULL}, 4 of 9 left for another call",
                                                   f"{answers.DISK_FULL}, 4 of 4 left for another call"], day="",
                                      rc=3)
    assert len(calls) == 2 and not any("--answer-only" in c for c in calls)
    assert uv == ["uv cache clean"]
    assert "::warning::answers: the disk is full again with nothing run since room was made" in said
