"""The benchmarks workflow's chain run here job by job (tests/gha.py: each step's shell as the runner runs it, the
artifacts handed on as folders): a night's plan → cpu jobs → merge (the history branch, kerasbench merge, the
site), and a pull request's plan → cpu jobs (the pull request and its base measured in one job) → gate summary.

Faked: `asv` (its `run` writes a results file and a fixture's records for the commit it is given, under the
machine and environment it is given), `pip install` (nothing is installed over this interpreter),
`kerasbench envs --create` and `kerasbench publish` (logged; test_fanout and test_asv run the real ones). Real:
everything else the workflow runs, with this checkout's kerasbench and .ci/history against a local bare repository
standing in for the GitHub remote. A broken hand-off between jobs fails here."""

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import gha

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "compare"

FAKE_ASV = """#!/usr/bin/env bash
set -euo pipefail
echo "asv $*" >> "$FAKE_LOG"
case "$1" in
  machine) exit 0 ;;
  run)
    shift
    env_name='' machine='' range=''
    while [ $# -gt 0 ]; do
      case "$1" in
        -E) env_name=$2; shift 2 ;;
        --machine) machine=$2; shift 2 ;;
        --config) shift 2 ;;
        *) range=$1; shift ;;
      esac
    done
    commit=$(git rev-parse "${range%^!}")
    exec "$REAL_PYTHON" "$FAKE_WRITER" "$commit" "$env_name" "$machine"
    ;;
esac
exit 1
"""

WRITER = """import json, os, shutil, sys
commit, env, machine = sys.argv[1:4]
fixtures = json.loads(os.environ["FAKE_RECORDS"])
# a commit's fixture, else an environment's (a key the environment's name ends with: "tensorflow-cpu2.12.1")
src = fixtures.get(commit[:8]) or next((p for k, p in fixtures.items() if env.endswith(k)), None) or fixtures["default"]
results = os.path.join(".asv", "results", machine)
os.makedirs(results, exist_ok=True)
with open(os.path.join(results, "machine.json"), "w") as f:
    json.dump({"machine": machine, "version": 1}, f)
with open(os.path.join(results, commit[:8] + "-" + env + ".json"), "w") as f:
    json.dump({"commit_hash": commit, "env_name": env, "results": {}, "version": 2}, f)
records = os.path.join(".asv", "records", machine, commit[:8] + "-" + env)
os.makedirs(records, exist_ok=True)
shutil.copy(src, os.path.join(records, "sweep.json"))
"""

FAKE_KERASBENCH = """#!/usr/bin/env bash
if [ "$1" = run ]; then  # the nightly job's: the records of a fixture (a nightly's, or the release's)
  echo "kerasbench $*" >> "$FAKE_LOG"
  out=$(echo "$*" | sed -n 's/.*--json \\([^ ]*\\).*/\\1/p')
  case "$*" in *"--tf nightly"*) cp "$FAKE_NIGHTLY" "$out" ;; *) cp "$FAKE_RELEASE" "$out" ;; esac
  exit 0
fi
case "$1 $*" in
  "envs "*--create*|"publish "*)
    echo "kerasbench $*" >> "$FAKE_LOG"
    if [ "$1" = publish ]; then mkdir -p .asv/html && echo '<html>dashboard</html>' > .asv/html/index.html; fi
    exit 0 ;;
esac
exec "$REAL_PYTHON" -m kerasbench "$@"
"""

FAKE_PYTHON = """#!/usr/bin/env bash
if [ "$1" = -m ] && [ "$2" = pip ]; then echo "python $*" >> "$FAKE_LOG"; exit 0; fi
exec "$REAL_PYTHON" "$@"
"""


@pytest.fixture(scope="module")
def workflow():
    return yaml.safe_load((ROOT / ".github" / "workflows" / "benchmarks.yml").read_text())


def _git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


class Runner:
    """The fakes, a bare repository as the remote, and clones as the jobs' checkouts."""

    def __init__(self, tmp: Path, records: dict):
        self.tmp, self.artifacts = tmp, tmp / "artifacts"
        self.artifacts.mkdir()
        self.bin = tmp / "bin"
        self.bin.mkdir()
        for name, text in (("asv", FAKE_ASV), ("kerasbench", FAKE_KERASBENCH), ("python", FAKE_PYTHON)):
            (self.bin / name).write_text(text)
            (self.bin / name).chmod(0o755)
        (tmp / "writer.py").write_text(WRITER)
        self.log = tmp / "fake.log"
        self.remote = tmp / "remote.git"
        _git(tmp, "init", "-q", "--bare", str(self.remote))
        self.source = self.clone("source")  # what the remote's main holds: this checkout's HEAD, .ci as here
        _git(self.source, "push", "-q", "origin", "HEAD:refs/heads/main")
        self.records = records
        self.n = 0
        self.nightly = None

    def clone(self, name: str) -> Path:
        """A job's checkout: this repository's HEAD with this working tree's .ci/ (uncommitted edits too)."""
        path = self.tmp / name
        _git(self.tmp, "clone", "-q", str(ROOT), str(path))
        _git(path, "checkout", "-q", "-B", "main")
        shutil.rmtree(path / ".ci")
        shutil.copytree(ROOT / ".ci", path / ".ci")
        shutil.copy(ROOT / "asv.matrix.json", path / "asv.matrix.json")
        shutil.copy(ROOT / "asv.gpu.json", path / "asv.gpu.json")
        if (self.tmp / "remote.git").exists():
            _git(path, "remote", "set-url", "origin", str(self.remote))
            _git(path, "fetch", "-q", "origin")
            if _git(path, "ls-remote", "origin", "refs/heads/main"):
                _git(path, "reset", "-q", "--hard", "origin/main")
                shutil.rmtree(path / ".ci")
                shutil.copytree(ROOT / ".ci", path / ".ci")
        return path

    def job(self, workflow, job_id, context, cwd=None) -> gha.Job:
        self.n += 1
        cwd = cwd or self.clone(f"{job_id}-{self.n}")
        env = {"FAKE_LOG": str(self.log), "FAKE_NIGHTLY": str(self.tmp / "nightly-run.json"),
               "FAKE_RELEASE": str(FIXTURES / "tf221.json"), "FAKE_WRITER": str(self.tmp / "writer.py"),
               "REAL_PYTHON": sys.executable, "FAKE_RECORDS": json.dumps(self.records), "HOME": str(self.tmp / "home"),
               "PYTHONPATH": str(ROOT)}
        return gha.Job(workflow, job_id, cwd, self.artifacts, context, env=env, path=[str(self.bin)]).run()


def _context(event, sha, **more):
    github = {"event_name": event, "sha": sha, "repository": "owner/kerasbench", "run_id": 99,
              "ref": "refs/heads/main", "repository_owner": "owner", "event": {"repository": {"name": "kerasbench"}}}
    github.update(more.pop("github", {}))
    return {"github": github, "vars": more.pop("vars", {}), "inputs": {}, "runner": {"os": "Linux"}, **more}


def _plan(runner, workflow, context):
    plan = runner.job(workflow, "plan", context)
    assert not plan.failed, plan.transcript()
    assert workflow["jobs"]["cpu"]["if"] and gha.evaluate(workflow["jobs"]["cpu"]["if"], {"needs": {"plan": {
        "outputs": plan.outputs}}})
    return plan, json.loads(plan.outputs["cpu"])["include"]


def _nightly_records(runner, day, source):
    """What `kerasbench run --tf nightly` writes on the night of `day`: a fixture's records as that nightly's."""
    data = json.loads(source.read_text())
    for record in data["records"]:
        record["environment"].update(tensorflow=f"2.23.0-dev{day.replace('-', '')}", tf_distribution="tf-nightly",
                                     nightly={"package": "tf-nightly", "day": day, "flavour": "cuda",
                                              "version": f"2.23.0.dev{day.replace('-', '')}"})
    (runner.tmp / "nightly-run.json").write_text(json.dumps(data))


def _night(runner, workflow, releases, day="2026-10-26", nightly_source=FIXTURES / "tf221.json", answer_minutes="0"):
    """One night's plan → cpu jobs → nightly → merge; `answer_minutes`: the atlas' answers' budget (0: none here,
    where a command would measure for real: tests/test_atlas_alive.py's night with every command answered)."""
    head = _git(runner.source, "rev-parse", "HEAD")
    context = _context("schedule", head, vars={"KERASBENCH_RELEASES": releases,
                                               "KERASBENCH_ANSWER_MINUTES": answer_minutes})
    plan, jobs = _plan(runner, workflow, context)
    cpu = [runner.job(workflow, "cpu", dict(context, matrix=entry)) for entry in jobs]
    for job in cpu:
        assert not job.failed, job.transcript()
    _nightly_records(runner, day, nightly_source)
    assert gha.evaluate(workflow["jobs"]["nightly"]["if"], context)
    nightly = runner.job(workflow, "nightly", dict(context, needs={"plan": {"result": "success"}}))
    runner.nightly = nightly
    needs = {"plan": {"result": "success", "outputs": plan.outputs}, "cpu": {"result": "success"},
             "gpu": {"result": "skipped"}, "nightly": {"result": "failure" if nightly.failed else "success"}}
    assert gha.evaluate(workflow["jobs"]["merge"]["if"], dict(context, needs=needs),
                        {"cancelled": lambda: False})
    merge = runner.job(workflow, "merge", dict(context, needs=needs))
    assert not merge.failed, merge.transcript()
    return head, jobs, merge


def test_a_night_hands_each_job_s_results_to_the_merge_and_keeps_the_history_in_a_branch(workflow, tmp_path):
    runner = Runner(tmp_path, {"default": str(FIXTURES / "tf221.json")})
    head, jobs, merge = _night(runner, workflow, "2.12.1,2.21.0")
    labels = [entry["label"] for entry in jobs]
    assert {"2.12.1", "2.21.0"} <= set(labels)
    machine = "gha-ubuntu-" + os.uname().machine
    for entry in jobs:  # each cpu job's artifact: the hidden .asv trees, laid out as the merge job reads them
        part = runner.artifacts / f"results-cpu-{entry['label']}"
        assert (part / "results" / machine / f"{head[:8]}-{entry['env']}.json").is_file()
        assert (part / "records" / machine / f"{head[:8]}-{entry['env']}" / "sweep.json").is_file()
    log = runner.log.read_text()
    for entry in jobs:  # the environment made through kerasbench (uv) before asv runs in it
        assert f"kerasbench envs --config asv.matrix.json --create {entry['env']}" in log
    # the history branch on the remote: this night's records of every job, one commit
    history = tmp_path / "history-check"
    _git(tmp_path, "clone", "-q", "--branch", "benchmark-results", str(runner.remote), str(history))
    assert _git(history, "rev-list", "--count", "HEAD") == "1"
    kept = sorted(p.name for p in (history / "records" / machine).iterdir())
    assert kept == sorted(f"{head[:8]}-{entry['env']}" for entry in jobs)
    # the site: the dashboard and the data to download, as upload-pages-artifact hands it to deploy-pages
    site = runner.artifacts / "github-pages"
    assert (site / "index.html").is_file()
    with tarfile.open(site / "data" / "all.tar.gz") as tar:
        names = tar.getnames()
    assert any(n.endswith(f"{head[:8]}-{jobs[0]['env']}/sweep.json") for n in names)
    assert "no branch benchmark-results" in merge.transcript()
    assert not runner.nightly.failed, runner.nightly.transcript()  # the nightly as the release: nothing regressed
    assert (runner.artifacts / "nightly-records" / "2026-10-26.json").is_file()
    report = (site / "nightlies.html").read_text()
    assert "2.23.0-dev20261026" in report and "2.21.0" in report

    # the next night, a new commit on main: the history grows in its branch, from the branch (not from the site)
    _git(runner.source, "commit", "-q", "--allow-empty", "-m", "another day")
    _git(runner.source, "push", "-q", "origin", "HEAD:refs/heads/main")
    shutil.rmtree(runner.artifacts)
    runner.artifacts.mkdir()
    second, jobs2, merge2 = _night(runner, workflow, "2.12.1", day="2026-10-27", nightly_source=FIXTURES / "tf212.json")
    assert runner.nightly.failed and "are regressed (--fail-on)" in runner.nightly.transcript()  # the gate
    _git(history, "pull", "-q")
    assert _git(history, "rev-list", "--count", "HEAD") == "2"
    assert sorted(p.name for p in (history / "nightly").iterdir()) == ["2026-10-26.json", "2026-10-27.json",
                                                                       "release.json"]
    report = (runner.artifacts / "github-pages" / "nightlies.html").read_text()  # a series over the nightlies' days
    assert "2.23.0-dev20261026" in report and "2.23.0-dev20261027" in report
    kept = {p.name for p in (history / "records" / machine).iterdir()}
    assert {f"{head[:8]}-{entry['env']}" for entry in jobs} | {f"{second[:8]}-{e['env']}" for e in jobs2} == kept
    assert "branch benchmark-results at" in merge2.transcript()

    # the same night again (a re-run): its files are replaced, the history says nothing new
    shutil.rmtree(runner.artifacts)
    runner.artifacts.mkdir()
    _, _, merge3 = _night(runner, workflow, "2.12.1")
    assert "nothing new to push" in merge3.transcript()
    _git(history, "pull", "-q")
    assert _git(history, "rev-list", "--count", "HEAD") == "2"


def _relabelled(tmp_path, name, source, **environment):
    data = json.loads(source.read_text())
    for record in data["records"]:
        record["environment"].update(environment)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize("hardware", ["one runner", "two hardware fingerprints"])
def test_a_pull_request_is_gated_against_its_base_measured_in_the_same_job(workflow, tmp_path, hardware):
    """Base and pull request measured in one job: a regression fails the job and reaches the one summary. Records
    of other hardware (what gating against another runner's published records gave) are not comparable: the
    summary says so and the gate passes."""
    runner = Runner(tmp_path, {})
    clone = runner.clone("pr")
    base = _git(clone, "rev-parse", "HEAD")
    _git(clone, "commit", "-q", "--allow-empty", "-m", "the pull request")
    head = _git(clone, "rev-parse", "HEAD")
    tf = json.loads((FIXTURES / "tf221.json").read_text())["records"][0]["environment"]
    base_records = _relabelled(tmp_path, "base.json", FIXTURES / "tf212.json",
                               **{k: tf[k] for k in ("tensorflow", "keras", "numpy")})
    more = {"cpu_model": "Another CPU @ 9.99GHz"} if hardware == "two hardware fingerprints" else {}
    head_records = _relabelled(tmp_path, "head.json", FIXTURES / "tf221.json", **more)
    runner.records = {base[:8]: base_records, head[:8]: head_records}
    event = {"action": "labeled", "label": {"name": "benchmark"}, "number": 7, "repository": {"name": "kerasbench"},
             "pull_request": {"number": 7, "labels": [{"name": "benchmark"}], "base": {"sha": base}}}
    context = _context("pull_request", head, vars={"KERASBENCH_RELEASES": "2.21.0"},
                       github={"event": event, "ref": "refs/pull/7/merge"})
    plan = runner.job(workflow, "plan", context, cwd=clone)
    assert not plan.failed, plan.transcript()
    entry = next(e for e in json.loads(plan.outputs["cpu"])["include"] if e["label"] == "2.21.0")
    job = runner.job(workflow, "cpu", dict(context, matrix=entry), cwd=clone)
    runs = [line for line in runner.log.read_text().splitlines() if line.startswith("asv run")]
    machine = "gha-ubuntu-" + os.uname().machine
    assert [r.split()[-1] for r in runs] == ["HEAD^!", f"{base}^!"]  # both in this job, on this runner's machine
    assert all(f"--machine {machine}" in r for r in runs)
    gate = runner.artifacts / "gate-cpu-2.21.0" / "cpu-2.21.0.md"
    assert gate.is_file(), job.transcript()
    verdicts = {cell.strip() for line in gate.read_text().splitlines() if line.startswith("|")
                for cell in line.strip("|").split("|")}  # the markdown table's cells, whatever their padding
    if hardware == "one runner":
        assert job.failed and "are regressed (--fail-on)" in job.transcript()
        assert "regressed" in verdicts
    else:
        assert not job.failed, job.transcript()
        assert "other hardware (cpu_model" in gate.read_text() and "not comparable" in verdicts
        assert "regressed" not in verdicts
    needs = {"plan": {"result": "success"}, "cpu": {"result": "failure" if job.failed else "success"}}
    assert gha.evaluate(workflow["jobs"]["gate"]["if"], dict(context, needs=needs), {"always": lambda: True})
    summary = runner.job(workflow, "gate", dict(context, needs=needs))
    assert not summary.failed, summary.transcript()
    text = summary.summary
    assert "### TF 2.21.0" in text and gate.read_text().strip() in text
    assert f"cpu jobs: {needs['cpu']['result']}" in text
    assert "skipped: the summary as a pull request comment" in summary.transcript()  # off unless the variable says
