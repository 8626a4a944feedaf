"""Release environments (kerasbench.asvconf): made with uv where asv would make them, reused by asv, the
current interpreter used where it already is the release, and an interrupted or failed creation leaves nothing."""

import os
import pathlib
import signal
import sys
import time
from importlib import metadata

import pytest

from kerasbench import asvconf, environment, install
from kerasbench.errors import UsageError

ROOT = pathlib.Path(__file__).resolve().parent.parent

FAKE_UV = """#!{python}
import os, sys, time
argv = sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(" ".join(argv) + "\\n")
mode = {mode!r}
if argv[0] == "venv":
    path = argv[-1]
    os.makedirs(os.path.join(path, "bin"))
    os.symlink({python!r}, os.path.join(path, "bin", "python"))
    os.symlink({python!r}, os.path.join(path, "bin", "pip"))  # asv only checks that pip is there
elif mode == "fail":
    print("error: No solution found when resolving dependencies")
    sys.exit(1)
elif mode == "slow":
    time.sleep(3)
elif mode == "hang":
    with open({log!r} + ".pid", "w") as f:
        f.write(str(os.getpid()))
    time.sleep(1000)
"""


@pytest.fixture
def fake_uv(tmp_path, monkeypatch):
    def make(mode="ok"):
        uv = tmp_path / "bin" / "uv"
        uv.parent.mkdir(exist_ok=True)
        uv.write_text(FAKE_UV.format(python=sys.executable, log=str(tmp_path / "uv.log"), mode=mode))
        uv.chmod(0o755)
        monkeypatch.setattr(install, "installer", lambda env: str(uv))
        return tmp_path / "uv.log"
    return make


REQS = {"tensorflow-cpu": "2.15.1", "keras": "2.15.0", "numpy": "1.26.4", "scipy": "1.17.1", "pip+asv_runner": "0.3.2"}


def test_uv_makes_the_environment_asv_finds_present(config, fake_uv):
    log = fake_uv()
    said = []
    python, name = environment.python_for(config, REQS, said.append)
    conf, env = environment.environment_for(config, REQS)
    assert name == env.name and python == os.path.join(env._path, "bin", "python")
    assert env.check_presence()  # what `asv run --config … -E virtualenv:3.11` asks before it would create one
    venv, install = log.read_text().splitlines()
    assert venv.startswith("venv") and "--seed" in venv and venv.endswith(env._path)
    pins = install.split()
    assert "tensorflow-cpu==2.15.1" in pins and "asv_runner==0.3.2" in pins and "keras==2.15.0" in pins
    assert "--compile-bytecode" in pins  # as pip installs: imports from source leave free heap that hides RSS growth
    assert any("uv installs 5 pinned packages" in s for s in said)
    environment.python_for(config, REQS)  # present: not made again
    assert len(log.read_text().splitlines()) == 2


def test_a_failed_uv_is_one_line_and_leaves_no_folder(config, fake_uv):
    fake_uv("fail")
    with pytest.raises(UsageError, match="uv pip failed: error: No solution found"):
        environment.python_for(config, REQS)
    _, env = environment.environment_for(config, REQS)
    assert not os.path.exists(env._path)


INTERRUPTED = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # a parent started in the background ignores SIGINT
sys.path.insert(0, {root!r})
from kerasbench import asvconf, environment, install
install.installer = lambda env: {uv!r}
environment.python_for({config!r}, {reqs!r})
"""


def test_an_interrupted_uv_is_ended_and_leaves_no_folder(config, fake_uv, tmp_path):
    """Ctrl-C while uv installs: uv ended, no half-made folder. In a fresh interpreter, sent a real SIGINT (the
    test process's own signal state is what earlier tests left)."""
    import subprocess

    log = fake_uv("hang")
    pid_file = pathlib.Path(str(log) + ".pid")
    code = INTERRUPTED.format(root=str(ROOT), uv=str(tmp_path / "bin" / "uv"), config=config, reqs=REQS)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(400):
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    pid = int(pid_file.read_text())
    with pytest.raises(OSError):
        os.kill(pid, 0)  # uv ended (reaped) with the interrupt
    _, env = environment.environment_for(config, REQS)
    assert not os.path.exists(env._path)


MAKES = """
import sys
sys.path.insert(0, {root!r})
from kerasbench import environment, install
install.installer = lambda env: {uv!r}
print(environment.python_for({config!r}, {reqs!r})[1])
"""


def test_two_processes_asking_for_one_environment_make_it_once(config, fake_uv, tmp_path):
    """A second kerasbench asking for an environment another is making (two nightly triages, two answer lanes, one
    config) waits for it, then uses it: before the lock it removed the first's half-made folder and made it again."""
    import subprocess

    log = fake_uv("slow")  # uv's install takes 3 s after the venv is made
    _, env = environment.environment_for(config, REQS)
    code = MAKES.format(root=str(ROOT), uv=str(tmp_path / "bin" / "uv"), config=config, reqs=REQS)
    first = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(400):  # the first has made the venv: the folder is half made
        if os.path.isdir(os.path.join(env._path, "bin")):
            break
        time.sleep(0.05)
    assert os.path.isdir(os.path.join(env._path, "bin")), first.communicate(timeout=60)
    said = []
    python, name = environment.python_for(config, REQS, said.append)
    out, err = first.communicate(timeout=60)
    assert first.returncode == 0 and out.strip() == name == env.name, err
    assert any("waiting for another process making environment" in s for s in said), said
    assert not any("half-made" in s or "creating asv environment" in s for s in said), said
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["venv", "pip"]  # made once
    assert env.check_presence() and python == os.path.join(env._path, "bin", "python")


def test_an_environment_another_process_measures_in_is_not_removed_under_it(config, fake_uv, tmp_path):
    """A nightly triage's clean-up removes the environments it made, but not one another kerasbench took up and may
    still measure in (stop 51: "No module named 'tensorflow'" in a lane whose nightly the other lane removed)."""
    import subprocess

    fake_uv()
    _, env = environment.environment_for(config, REQS)
    holds = MAKES.format(root=str(ROOT), uv=str(tmp_path / "bin" / "uv"), config=config, reqs=REQS) + \
        "sys.stdout.flush()\nsys.stdin.readline()\n"  # uses it until told to end
    other = subprocess.Popen([sys.executable, "-c", holds], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert other.stdout.readline().strip() == env.name, other.stderr.read()
    environment.python_for(config, REQS)  # this process takes it up too (found made), as a triage would
    assert not environment.remove_unused(env._path) and env.check_presence()  # the other uses it: kept
    assert not environment.handed_over(env._path)  # asked without hand_over: nothing marked
    other.communicate("\n", timeout=60)
    environment.python_for(config, REQS)  # taken up again after the refusal
    assert environment.remove_unused(env._path) and not os.path.exists(env._path)  # no one else: removed


def test_an_environment_its_maker_could_not_remove_is_removed_by_the_last_triage_using_it(config, fake_uv, tmp_path):
    """Two nightly triages share an environment: the one that made it ends first and cannot remove it (the other
    measures in it), so it hands it over; the other, which did not make it, removes it when it ends (stop 58 left
    such environments behind). One a later triage keeps as its bracket is no longer handed over."""
    import subprocess

    from kerasbench.commands.triage import nightly_epilogue
    from kerasbench.triage import Outcome

    fake_uv()
    python, _ = environment.python_for(config, REQS)  # this process made it (the first triage)
    _, env = environment.environment_for(config, REQS)
    holds = MAKES.format(root=str(ROOT), uv=str(tmp_path / "bin" / "uv"), config=config, reqs=REQS) + \
        "sys.stdout.flush()\nsys.stdin.readline()\n"  # the second triage, measuring in it until told to end
    other = subprocess.Popen([sys.executable, "-c", holds], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert other.stdout.readline().strip() == env.name, other.stderr.read()
    outcome = Outcome(versions=["a", "b", "c"], bracket=("a", "b"))
    text = nightly_epilogue(outcome, {}, None, "3.11", [], {"c": python}, "cpu")
    assert "Environments: removed 0 this triage made" in text and "; handed 1 over to another kerasbench" in text
    assert env.check_presence() and environment.handed_over(env._path)
    other.communicate("\n", timeout=60)

    python, _ = environment.python_for(config, REQS)  # the second triage's ending, played in this process
    later = Outcome(versions=["b", "c", "d"], bracket=("b", "d"))
    text = nightly_epilogue(later, {}, None, "3.11", [], {}, "cpu", {"c": python})
    assert "Environments: removed 0 this triage made and 1 another triage made and left to this one" in text
    assert not os.path.exists(env._path) and not environment.handed_over(env._path)

    python, _ = environment.python_for(config, REQS)  # made again, handed over, then found by a triage keeping it
    open(environment.locks_of(env._path) + environment.HANDED_OVER, "a").close()
    text = nightly_epilogue(Outcome(versions=["b", "c"], bracket=("b", "c")), {}, None, "3.11", [], {}, "cpu",
                            {"c": python})
    assert env.check_presence() and not environment.handed_over(env._path) and "Environments" not in text
    found_only = nightly_epilogue(later, {}, None, "3.11", [], {}, "cpu", {"c": python})  # not handed over: not its
    assert env.check_presence() and "Environments" not in found_only


def test_a_release_this_interpreter_already_is_not_made_again(config, fake_uv, monkeypatch):
    log = fake_uv()
    here = dict(REQS)
    for name in ("numpy", "scipy", "keras"):
        try:
            here[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pytest.skip(f"{name} is not installed here")
    monkeypatch.setattr(metadata, "version", lambda name: here.get(name) or "0")  # TF "installed" too
    python, name = environment.python_for(config, here)
    assert (python, name) == (sys.executable, environment.SAME) and not log.exists()
    other = dict(here, numpy="0.0.1")  # one pin differs: an environment of its own
    assert environment.python_for(config, other)[0] != sys.executable


def test_installer_choice(monkeypatch):
    class Env:
        tool_name = "virtualenv"

    monkeypatch.setenv(install.INSTALLER_VAR, "pip")
    assert install.installer(Env()) is None
    monkeypatch.setenv(install.INSTALLER_VAR, "conda")
    with pytest.raises(UsageError, match="Expected one of: uv, pip"):
        install.installer(Env())
    monkeypatch.delenv(install.INSTALLER_VAR)
    assert install.installer(object()) is None  # not an asv virtualenv: asv makes it


def test_another_python_is_its_own_asv_environment(config):
    versions = [p for p in ("3.10", "3.12") if os.path.isdir(os.path.expanduser("~/.pyenv/versions"))
                and any(v.startswith(p + ".") for v in os.listdir(os.path.expanduser("~/.pyenv/versions")))]
    if not versions:
        pytest.skip("no pyenv Python 3.10 or 3.12 here")
    _, env = environment.environment_for(config, REQS, versions[0])
    assert env.name.startswith(f"virtualenv-py{versions[0]}-")
    assert env.name != environment.environment_for(config, REQS)[1].name


def test_unknown_python_lists_the_ones_found():
    with pytest.raises(UsageError, match=r"No Python 3\.5 on this machine.*Expected one of: "):
        environment.interpreter("3.5")


def test_environments_live_beside_the_config_whatever_the_current_folder(tmp_path, monkeypatch):
    """asv reads env_dir against the current folder (it runs from the clone); a config found from anywhere must not
    make `run --tf` create a second environment wherever the user happens to be."""
    import shutil
    from pathlib import Path

    from kerasbench import environment, releases

    folder = tmp_path / "clone"
    folder.mkdir()
    config = folder / "asv.matrix.json"
    shutil.copy(Path(__file__).resolve().parent.parent / "asv.matrix.json", config)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    reqs = releases.requirements_for("2.12.1", asvconf.includes(str(config)))
    _, env = environment.environment_for(str(config), reqs)
    assert Path(env._path).parent == folder / ".asv" / "env"


def test_envs_create_makes_the_named_environments_asv_reuses(config, fake_uv, capsys, monkeypatch):
    """`kerasbench envs --create NAME` (CI's way): each named environment of the matrix made where asv finds it
    present, even when this interpreter has its pins; an axis entry (tf_keras) by its own name; an unknown name
    lists the valid ones and makes nothing."""
    from kerasbench.cli import main

    log = fake_uv()
    monkeypatch.setattr(install, "import_check", lambda *a: "")  # the fake's interpreter has no TF to import
    entries = asvconf.matrix_entries(config)
    release = next(e for e in entries if not e["axis"] and e["req"].get("tensorflow-cpu") == "2.21.0")
    axis = next(e for e in entries if e["axis"] == "tf_keras")
    code = main(["envs", "--config", config, "--create", f"{release['name']},{axis['name']}"])
    out, err = capsys.readouterr()
    assert code == 0, err
    made = dict(line.split("\t") for line in out.splitlines())
    assert list(made) == [release["name"], axis["name"]]
    for entry in (release, axis):
        _, env = environment.environment_for(config, entry["req"], str(entry["python"]))
        assert env.name == entry["name"] and env.check_presence()  # `asv run -E NAME` would not make it again
        assert made[entry["name"]] == os.path.join(env._path, "bin", "python")
    assert "2 environment(s) ready" in err and log.read_text().count("venv ") == 2
    code = main(["envs", "--config", config, "--create", "virtualenv-py3.11-nosuch"])
    err = capsys.readouterr().err
    assert code == 2 and "Expected one of:" in err and release["name"] in err and "Traceback" not in err
    assert log.read_text().count("venv ") == 2
