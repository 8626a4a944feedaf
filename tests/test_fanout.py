"""A fan-out as CI runs it: configs found from anywhere, the job list as JSON, jobs in separate clones
with their own host and machine names, merged into one tree that compare, report and publish read."""

import json
import os
from pathlib import Path

import pytest

from kerasbench import asvconf
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
    assert asvconf.find_config(None, asvconf.GPU_CONFIG) == str(ROOT / "asv.gpu.json")
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
    monkeypatch.setattr(asvconf, "clone_dir", lambda: str(elsewhere / "site-packages"))
    code, out, err = call(["run", "--tf", "2.15.1", "--loop", "control", "--strategy", "control_noop"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    for place in ("--config (not given)", "$KERASBENCH_CONFIG (unset)", f"the current folder ({elsewhere})",
                  f"the clone kerasbench was imported from ({elsewhere / 'site-packages'})"):
        assert place in err
    monkeypatch.setenv(asvconf.CONFIG_VAR, str(elsewhere / "nope"))  # set but wrong: said, no fallback
    code, _, err = call(["envs"], capsys)
    assert code == 2 and "$KERASBENCH_CONFIG=" in err and "nope" in err


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
    jobs = json.loads(out)["include"]
    pinned = [e["req"] for e in asvconf.includes(str(ROOT / config))]
    assert [j["tf"] for j in jobs] == [r.get("tensorflow-cpu") or r.get("tensorflow") for r in pinned]
    assert [j["keras"] for j in jobs] == [r["keras"] for r in pinned]
    assert {j["device"] for j in jobs} == {device} and {j["config"] for j in jobs} == {config}
    assert [n for n, _ in asvconf.environments(str(ROOT / config))] == [j["name"] for j in jobs]
    assert str(ROOT) not in out and os.uname().nodename not in out  # the same on every machine
