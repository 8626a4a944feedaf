"""A fan-out as CI runs it: configs found from anywhere, the job list as JSON, jobs in separate clones
with their own host and machine names, merged into one tree that compare, report and publish read."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kerasbench import asvconf, environment
from kerasbench.cli import main

ROOT = Path(__file__).resolve().parent.parent
PYPI = str(ROOT / "tests" / "fixtures" / "pypi")


def call(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---------------------------------------------------------------- configs from anywhere


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """The current folder is not the clone, and $KERASBENCH_CONFIG is unset."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(asvconf.CONFIG_VAR, raising=False)
    return tmp_path


def test_the_matrix_is_found_in_the_clone_kerasbench_came_from(elsewhere, capsys):
    assert asvconf.find_config(None) == str(ROOT / "asv.matrix.json")
    assert asvconf.find_config(None, "asv.gpu.json") == str(ROOT / "asv.gpu.json")
    code, out, _ = call(["envs", "--tf", "2.15.1"], capsys)
    assert code == 0 and out.strip().endswith("tensorflow-cpu2.15.1")


def test_the_search_order_is_option_variable_folder_clone(elsewhere, monkeypatch):
    (elsewhere / "asv.matrix.json").write_text("{}")
    assert asvconf.find_config(None) == "asv.matrix.json"  # the current folder before the clone
    assert asvconf.find_config("given.json") == "given.json"  # --config as given, even when missing
    other = elsewhere / "other"
    other.mkdir()
    (other / "asv.matrix.json").write_text("{}")
    monkeypatch.setenv(asvconf.CONFIG_VAR, str(other))  # a folder: the default name in it
    assert asvconf.find_config(None) == str(other / "asv.matrix.json")
    monkeypatch.setenv(asvconf.CONFIG_VAR, str(other / "asv.matrix.json"))  # a file: that file
    assert asvconf.find_config(None, asvconf.DEFAULT_CONFIG) == str(other / "asv.matrix.json")


def test_nothing_found_names_every_place_searched(elsewhere, monkeypatch, capsys):
    monkeypatch.setattr(asvconf, "clone_dir", lambda: str(elsewhere / "site-packages"))  # a clone without configs
    code, out, err = call(["run", "--tf", "2.15.1", "--loop", "control", "--strategy", "control_noop"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    for place in ("--config (not given)", "$KERASBENCH_CONFIG (unset)", f"the current folder ({elsewhere})",
                  f"the clone kerasbench was imported from ({elsewhere / 'site-packages'})"):
        assert place in err
    monkeypatch.setenv(asvconf.CONFIG_VAR, str(elsewhere / "nope"))  # set but wrong: said, no fallback
    code, _, err = call(["envs"], capsys)
    assert code == 2 and "$KERASBENCH_CONFIG=" in err and "nope" in err


@pytest.fixture
def wheel(elsewhere, monkeypatch):
    """kerasbench as an installed wheel: no clone beside the package, the configs in the package's shipped_configs
    (the same files as the clone's: tests/test_layout.py checks the wheel is built from them), the user's cache in
    the test's folder."""
    package = elsewhere / "site-packages" / "kerasbench"
    shipped = package / "shipped_configs"
    shipped.mkdir(parents=True)
    for name in ("asv.conf.json", "asv.matrix.json", "asv.gpu.json"):
        (shipped / name).write_text((ROOT / name).read_text())
    monkeypatch.setattr(asvconf, "from_clone", lambda: False)
    monkeypatch.setattr(asvconf, "shipped_configs", lambda: str(shipped))
    monkeypatch.setenv("XDG_CACHE_HOME", str(elsewhere / "cache"))
    (elsewhere / "work").mkdir()
    monkeypatch.chdir(elsewhere / "work")  # a user's folder, no config in it
    return shipped


def test_the_wheel_carries_the_clone_s_own_configs():
    """One copy: the package's configs are the clone's root files, mapped into the wheel by pyproject.toml."""
    import tomllib

    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "kerasbench.shipped_configs" in tool["packages"] and tool["package-dir"]["kerasbench.shipped_configs"] == "."
    assert tool["package-data"]["kerasbench.shipped_configs"] == ["asv*.json"]
    assert {p.name for p in ROOT.glob("asv*.json")} == {asvconf.MATRIX, asvconf.DEFAULT_CONFIG, "asv.gpu.json"}


def test_a_wheel_s_workers_import_kerasbench_alone_not_its_site_packages(elsewhere, monkeypatch):
    from kerasbench import files, runner
    from kerasbench.spec import RunSpec

    monkeypatch.setattr(files, "from_clone", lambda: False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(elsewhere / "cache"))
    folder = files.worker_path()
    assert folder.startswith(str(elsewhere / "cache" / "kerasbench" / "path"))
    assert os.listdir(folder) == ["kerasbench"]
    assert os.path.realpath(os.path.join(folder, "kerasbench")) == os.path.dirname(os.path.realpath(files.__file__))
    assert files.worker_path() == folder  # made once
    spec = RunSpec(loop="control", strategy="control_noop").validate()
    assert runner._worker_env(spec)["PYTHONPATH"].split(os.pathsep)[0] == folder
    monkeypatch.setattr(files, "from_clone", lambda: True)  # a clone: the clone itself, as before
    assert files.worker_path() == str(ROOT)


def test_an_installed_wheel_finds_the_configs_it_carries(wheel, capsys):
    assert asvconf.find_config(None) == str(wheel / "asv.matrix.json")
    assert asvconf.find_config(None, "asv.gpu.json") == str(wheel / "asv.gpu.json")
    code, out, _ = call(["envs", "--tf", "2.15.1"], capsys)
    assert code == 0 and out.strip().endswith("tensorflow-cpu2.15.1")
    cache = wheel.parent.parent.parent / "cache" / "kerasbench"  # its environments: the user's cache, not site-packages
    assert asvconf.env_dir(str(wheel / "asv.matrix.json")) == str(cache / "env")
    conf = asvconf.load_config(str(wheel / "asv.matrix.json"))
    assert (conf.env_dir, conf.results_dir) == (str(cache / "env"), str(cache / "results"))
    matrix = str(wheel / "asv.matrix.json")
    _, env = environment.environment_for(matrix, asvconf.includes(matrix)[0]["req"])
    assert env._path.startswith(str(cache / "env") + os.sep)


def test_a_wheel_without_the_config_says_it_searched_the_package_not_a_clone(wheel, capsys):
    (wheel / "asv.matrix.json").unlink()
    code, out, err = call(["run", "--tf", "2.15.1", "--loop", "control", "--strategy", "control_noop"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"the installed kerasbench package ({wheel})" in err and "clone kerasbench was imported" not in err
    code, _, err = call(["publish"], capsys)  # publish never uses the package's config: asv publishes a clone's
    assert code == 2 and "No asv config asv.conf.json found" in err and str(wheel) not in err


def test_commands_that_need_asv_name_the_extra_where_it_is_missing(monkeypatch, capsys):
    for name in ("asv", "asv.config", "asv.environment"):
        monkeypatch.setitem(sys.modules, name, None)  # imports of asv fail as where it is not installed
    for argv in (["envs"], ["run", "--tf", "2.15.1", "--loop", "control", "--strategy", "control_noop"]):
        code, out, err = call(argv, capsys)
        assert code == 2 and out == "" and err.count("\n") == 1, (argv, err)
        assert "asv is not installed" in err and "pip install 'kerasbench[releases]'" in err
    assert call(["list"], capsys)[0] == 0  # what does not need it still runs


def test_envs_accepts_a_patch_release_as_run_tf_does(elsewhere, monkeypatch, capsys):
    monkeypatch.setenv("KERASBENCH_PYPI", PYPI)
    code, out, _ = call(["envs", "--tf", "2.16.1"], capsys)  # not pinned by the matrix: pins derived
    assert code == 0 and "tensorflow-cpu2.16.1" in out and "keras3." in out
    code, _, err = call(["envs", "--tf", "2.99.0"], capsys)
    assert code == 2 and "Expected one of: 2.12.1" in err


@pytest.mark.parametrize("config, device", [("asv.matrix.json", "cpu"), ("asv.gpu.json", "gpu")])
def test_envs_json_is_github_s_matrix_of_the_config(elsewhere, capsys, config, device):
    code, out, _ = call(["envs", "--json", "--config", str(ROOT / config)], capsys)
    assert code == 0 and out.count("\n") == 1  # one line, for $GITHUB_OUTPUT
    every = json.loads(out)["include"]
    jobs = [j for j in every if not j["axis"]]  # one per release; the Keras and Python axes: tests/test_axes.py
    pinned = [e["req"] for e in asvconf.includes(str(ROOT / config))]
    assert [j["tf"] for j in jobs] == [r.get("tensorflow-cpu") or r.get("tensorflow") for r in pinned]
    assert [j["keras"] for j in jobs] == [r["keras"] for r in pinned]
    assert {j["device"] for j in jobs} == {device} and {j["config"] for j in jobs} == {config}
    assert [n for n, _ in environment.environments(str(ROOT / config))] == [j["name"] for j in every]
    assert str(ROOT) not in out and os.uname().nodename not in out  # the same on every machine


# ---------------------------------------------------------------- the fan-out, with the controls

# Two CI jobs: each its own clone, host name (as root, `unshare --uts`), asv machine and release.
# The controls import no TF, so a job's release is the label of its asv environment (ASV_ENV_NAME,
# which asv's own environments set; `--python=same` sets none): the plumbing is what is tested here.
JOBS = {"ci-tf212": ("runner-7c1f", "2.12.1"), "ci-tf221": ("runner-a93e", "2.21.0")}


def _can_unshare():
    import shutil

    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "--uts", "true"], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def fanout(tmp_path_factory):
    from conftest import clone_for_asv

    jobs = {}
    for machine, (host, release) in JOBS.items():
        work, repo = clone_for_asv(tmp_path_factory, machine)
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
        env = dict(os.environ, KERASBENCH_PROFILE="quick", HOME=str(work), ASV_PYTHONPATH=str(repo),
                   ASV_CONF_DIR=str(repo), ASV_COMMIT=commit, ASV_ENV_NAME=f"existing-py3.11-tensorflow-cpu{release}")
        for name in ("KERASBENCH_RECORDS_DIR", "KERASBENCH_MACHINE", "KERASBENCH_CONFIG"):
            env.pop(name, None)
        script = (f"asv machine --yes --machine {machine} >/dev/null && asv run --python=same --set-commit-hash HEAD "
                  f"-b ^control --machine {machine} --show-stderr")
        argv = ["sh", "-c", script]
        if _can_unshare():
            argv = ["unshare", "--uts", "sh", "-c", f"hostname {host} && {script}"]
        proc = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        jobs[machine] = repo
    _, site = clone_for_asv(tmp_path_factory, "site")  # the merge job's checkout
    return jobs, site


def test_each_job_keys_its_records_by_its_machine_name_not_its_host(fanout):
    jobs, _ = fanout
    for machine, repo in jobs.items():
        assert os.listdir(repo / ".asv" / "records") == [machine]
        [path] = (repo / ".asv" / "records" / machine).glob("*/control.json")
        env = json.loads(path.read_text())["records"][0]["environment"]
        assert env["machine_name"] == machine
        if _can_unshare():
            assert env["hostname"] == JOBS[machine][0]


def test_the_merged_tree_publishes_compares_and_reports_across_machines(fanout, capsys, monkeypatch):
    jobs, site = fanout
    monkeypatch.delenv(asvconf.CONFIG_VAR, raising=False)
    code, out, _ = call(["merge", *map(str, jobs.values()), str(site)], capsys)
    assert code == 0 and "0 already there" in out
    code, again, _ = call(["merge", *map(str, jobs.values()), str(site)], capsys)
    assert code == 0 and " 0 file(s) written" in again  # idempotent
    records = site / ".asv" / "records"
    assert sorted(os.listdir(records)) == sorted(JOBS)
    code, out, _ = call(["compare", str(records), "--format", "json"], capsys)
    result = json.loads(out)
    assert code == 0 and result["versions"] == ["2.12.1", "2.21.0"]
    assert "ci-tf212 (TF 2.12.1); ci-tf221 (TF 2.21.0): the same hardware fingerprint" in result["context"]
    assert {c["machines"] for c in result["cells"]} == {"ci-tf212 vs ci-tf221"}
    assert not any(c["hardware"] for c in result["cells"])
    monkeypatch.chdir(site.parent)  # publish finds the site's config by --config; the report goes beside
    code, out, err = call(["publish", "--config", str(site / "asv.conf.json"), "--cdn"], capsys)
    assert code == 0 and "ci-tf212+ci-tf221" in out, err  # the report of both machines' newest run
    index = json.loads((site / ".asv" / "html" / "index.json").read_text())
    assert set(index["machines"]) == set(JOBS)
    report = (site / ".asv" / "html" / "kerasbench-report.html").read_text()
    assert "2.12.1" in report and "2.21.0" in report
    assert (site / ".asv" / "html" / "atlas" / "index.html").exists()  # the atlas page, as the workflow publishes it


def test_a_control_takes_the_tf_release_of_its_run_folder(tmp_path):
    """`asv run -E existing:...` names no TF release: the controls (no TF import) take their run's other loops'."""
    from kerasbench.loading import load_records

    fixture = json.loads((ROOT / "tests" / "fixtures" / "compare" / "tf212.json").read_text())
    run = tmp_path / "ci-a" / "0123abcd-existing-py_opt_env_bin_python"
    run.mkdir(parents=True)
    (run / "sweep.json").write_text(json.dumps(fixture))
    control = json.loads(json.dumps(fixture))
    for r in control["records"]:
        r.update(loop="control")
        r["environment"].update(tensorflow=None, keras=None)
    (run / "control.json").write_text(json.dumps(control))
    versions = {(r["loop"], v) for r, _, v in load_records([str(tmp_path)])}
    assert versions == {(r["loop"], "2.12.1") for r in fixture["records"]} | {("control", "2.12.1")}
