"""Machine identity: the asv machine name records are keyed by, and the hardware fingerprint."""

import json
import os
import subprocess
import sys

import pytest

from kerasbench import machine, tree
from kerasbench.errors import UsageError


@pytest.fixture
def no_machine(monkeypatch, tmp_path):
    """No $KERASBENCH_MACHINE, an empty home (no ~/.asv-machine.json)."""
    monkeypatch.delenv(machine.ENV_VAR, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def _asv_file(home, *names):
    body = {"version": 1, **{n: {"machine": n, "arch": "x86_64"} for n in names}}
    (home / ".asv-machine.json").write_text(json.dumps(body))


def test_the_name_comes_from_the_option_the_variable_then_asv_s_file(no_machine, monkeypatch):
    monkeypatch.setattr(machine.platform, "node", lambda: "runner-4f2a")
    assert machine.name() == "runner-4f2a"  # nothing configured: the host, as asv itself does
    _asv_file(no_machine, "ci-tf212")
    assert machine.name() == "ci-tf212"  # the only machine of asv's file, whatever the host is called
    _asv_file(no_machine, "ci-tf212", "runner-4f2a")
    assert machine.name() == "runner-4f2a"  # asv's rule: the entry named after the host first
    monkeypatch.setenv(machine.ENV_VAR, "nightly-cpu")
    assert machine.name() == "nightly-cpu"
    assert machine.name("given") == "given"


@pytest.mark.parametrize("bad", ["", "../up", "a/b", ".hidden", "x" * 101])
def test_a_name_that_cannot_name_a_folder_is_refused(bad, no_machine, monkeypatch):
    monkeypatch.setenv(machine.ENV_VAR, bad or "-")
    with pytest.raises(UsageError, match="Invalid machine name"):
        machine.name(bad or None)


def test_the_asv_run_machine_is_read_from_the_ancestor(no_machine, monkeypatch, tmp_path):
    """asv passes no machine name to benchmarks: a process under `asv run --machine NAME` finds it in its parents."""
    fake = tmp_path / "asv"
    fake.write_text(f"#!{sys.executable}\nimport subprocess, sys\n"
                    "sys.exit(subprocess.call([sys.executable, '-c', "
                    "'from kerasbench import machine; print(machine.name())']))\n")
    fake.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    out = subprocess.run([str(fake), "run", "--machine", "from-asv-run"], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "from-asv-run", out.stderr


def test_records_are_keyed_by_the_machine_name_not_the_host(no_machine, monkeypatch, tmp_path):
    monkeypatch.setattr(machine.platform, "node", lambda: "runner-4f2a")
    monkeypatch.setenv(machine.ENV_VAR, "ci-tf221")
    folder = tree.run_folder(str(tmp_path), "0123abcd" * 5, "env")
    assert folder == str(tmp_path / "ci-tf221" / "0123abcd-env")


ENV = {"cpu_model": "AMD EPYC 7763", "cpu_count": 4, "memory_total": 16 * machine.GIB - 300 * 2**20,
       "allocator": "glibc", "libc": "glibc-2.36", "hostname": "runner-1", "machine_name": "ci-a"}


def test_the_fingerprint_ignores_names_and_a_few_mib_of_memory():
    other = dict(ENV, hostname="runner-2", machine_name="ci-b", memory_total=16 * machine.GIB - 100 * 2**20)
    assert machine.fingerprint(ENV)["memory_total"] == 16
    assert machine.difference(ENV, other) is None


@pytest.mark.parametrize("key, value, said", [("cpu_count", 2, "cpu_count 4 vs 2"),
                                               ("memory_total", 7 * machine.GIB, "memory_total 16 GiB vs 7 GiB"),
                                               ("gpu_name", None, None), ("allocator", "tcmalloc", "allocator"),
                                               ("cpu_model", "Intel Xeon", "cpu_model AMD EPYC 7763 vs Intel Xeon")])
def test_a_difference_in_the_hardware_is_named(key, value, said):
    other = dict(ENV, **{key: value})
    found = machine.difference(ENV, other)
    assert (found is None) if said is None else (said in found)


def test_older_records_without_a_fingerprint_are_comparable():
    assert machine.difference({}, ENV) is None and machine.difference(None, None) is None
    assert machine.label({"hostname": "old-box"}) == "old-box" and machine.label(ENV) == "ci-a"


def test_run_machine_names_the_records(no_machine, monkeypatch, tmp_path):
    from kerasbench.cli import main

    monkeypatch.setenv(machine.ENV_VAR, "")  # restored after the test: cmd_run sets it for its workers
    out = tmp_path / "r.json"
    code = main(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "3", "--warmup", "0",
                 "--machine", "laptop-7", "--json", str(out)], open(os.devnull, "w"))
    [rec] = json.loads(out.read_text())["records"]
    assert code == 0 and rec["environment"]["machine_name"] == "laptop-7"
    assert main(["run", "--loop", "control", "--strategy", "control_noop", "--machine", "../x"]) == 2
