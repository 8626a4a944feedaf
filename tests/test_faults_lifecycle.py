"""Fault suite, process lifecycle (issue #15, classes 3, 4, 5, 9): interrupts, lingering workers, exit codes,
results kept through later errors; the log tail and the wording of stops. Control loops and fakes, no TF.

The faults are injected into the worker by a sitecustomize on PYTHONPATH (the worker inherits the environment):
it patches the control loop's iteration to start a non-daemon thread, spawn `sleep 1000`, hang or raise.
"""

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from kerasbench import RunSpec, measure, procs, runner
from kerasbench.cli import main
from kerasbench.console import Progress
from kerasbench.protocol import spec_floors

ROOT = Path(__file__).resolve().parent.parent

SITECUSTOMIZE = '''
import os
if os.environ.get("KB_FAULT"):
    import subprocess, sys, threading, time
    from kerasbench import loops

    run = loops.Control.run
    state = {"started": False}

    def faulty(self, model, i, step):
        fault, only = os.environ["KB_FAULT"], os.environ.get("KB_FAULT_STRATEGY")
        if only and self.strategy.name != only:
            return run(self, model, i, step)
        if not state["started"]:
            state["started"] = True
            with open(os.environ["KB_FAULT_PIDS"], "a") as f:
                f.write(f"{os.getpid()}\\n")
            if fault == "thread":  # a non-daemon thread the interpreter waits for at exit
                threading.Thread(target=time.sleep, args=(1000,)).start()
            if fault in ("spawn", "hang"):  # a child user code started and never ended
                child = subprocess.Popen(["sleep", "1000"])
                with open(os.environ["KB_FAULT_PIDS"], "a") as f:
                    f.write(f"{child.pid}\\n")
        if fault == "hang":
            time.sleep(1000)
        if fault == "raise":
            raise RuntimeError("injected fault")
        return run(self, model, i, step)

    loops.Control.run = faulty
'''


@pytest.fixture
def fault(tmp_path, monkeypatch):
    """fault(kind, strategy=None): inject `kind` into the control loop of workers started from now on; the pid file."""
    folder = tmp_path / "fault"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    pids = tmp_path / "pids"

    def inject(kind, strategy=None):
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(folder), str(ROOT)]))
        monkeypatch.setenv("KB_FAULT", kind)
        monkeypatch.setenv("KB_FAULT_PIDS", str(pids))
        if strategy:
            monkeypatch.setenv("KB_FAULT_STRATEGY", strategy)
        return pids

    return inject


def read_pids(path):
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def alive(pid):
    """Running and not a zombie (a killed orphan is a zombie until init reaps it)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def run_cli(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()


# ---------------------------------------------------------------- class 3: interrupts end every worker


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_ends_every_worker_and_keeps_the_finished_pairs(fault, tmp_path, signum, code):
    pids = fault("hang", strategy="control_leak_native")
    path = tmp_path / "out.json"
    cmd = [sys.executable, "-m", "kerasbench", "run", "--loop", "control",
           "--strategy", "control_noop,control_leak_native", "--iterations", "3", "--warmup", "0",
           "--leak-kib", "64", "--json", str(path), "--jobs", "1"]  # one at a time: the first finishes first
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(read_pids(pids)) < 2:  # the hanging worker and the `sleep` it started
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        worker, child = read_pids(pids)
        assert alive(worker) and alive(child)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=2)
    finally:
        if proc.poll() is None:
            proc.kill()
    time.sleep(0.2)  # init reaps the orphans
    assert not alive(worker) and not alive(child)
    assert proc.returncode == code, err
    assert "Traceback" not in err and "1 of 2 pair(s) finished before the interrupt" in err
    assert f"kept in {path}" in err
    assert "control_noop" in out  # the table of what finished
    records = json.loads(path.read_text())["records"]
    assert [r["strategy"] for r in records] == ["control_noop"] and records[0]["status"] == "ok"


def test_an_interrupt_in_process_ends_the_worker_group(fault, monkeypatch):
    pids = fault("hang")
    sent = {}

    def interrupt_once_running(ev):  # Ctrl-C arrives while the worker hangs in its first iteration
        if ev["event"] == "phase" and ev["phase"] == "iteration" and not sent:
            sent["at"] = time.monotonic()
            deadline = time.monotonic() + 30
            while len(read_pids(pids)) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        with procs.interrupts():
            runner.run_worker(RunSpec("control", "control_noop", iterations=3, warmup=0).validate(),
                              progress=interrupt_once_running)
    time.sleep(0.2)
    assert read_pids(pids) and not any(alive(pid) for pid in read_pids(pids))
    assert procs.live() == []


# ---------------------------------------------------------------- class 4: workers that do not exit


def test_worker_with_a_lingering_thread_keeps_its_result_and_ends_within_the_grace(fault):
    fault("thread")
    started = time.monotonic()
    record = measure(RunSpec("control", "control_noop", iterations=3, warmup=0, time_limit=120))
    assert record["status"] == "ok", record["reason"]
    assert time.monotonic() - started < 20  # before: the whole time limit, then "stopped" and no result
    assert record["repeats"][0]["exit_seconds"] <= runner.EXIT_GRACE + 1


def test_children_that_user_code_started_end_with_the_pair(fault):
    pids = fault("spawn")
    record = measure(RunSpec("control", "control_noop", iterations=3, warmup=0))
    assert record["status"] == "ok"
    time.sleep(0.2)
    worker, child = read_pids(pids)
    assert not alive(child) and not alive(worker)  # before: `sleep 1000` outlived the run


# ---------------------------------------------------------------- class 5: exit codes


def test_a_stopped_pair_exits_1(capsys):
    code, text = run_cli(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", str(10**8),
                          "--warmup", "0", "--time-limit", "2", "--no-probes"])
    assert code == 1 and "stopped" in text  # before: 0


def test_a_failed_pair_exits_1_and_a_strategy_the_loop_does_not_take_exits_2(fault, capsys):
    # a strategy named for a loop it does not apply to is a user's mistake (it was a "skipped" row and exit 0)
    assert run_cli(["run", "--loop", "control", "--strategy", "clear_session"])[0] == 2
    assert "Expected one of: control_noop, control_leak_native, control_leak_python" in capsys.readouterr().err
    fault("raise")
    code, text = run_cli(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "2"])
    assert code == 1 and "failed" in text


# ---------------------------------------------------------------- class 9: results lost to later errors


def test_a_repro_failing_in_a_later_pair_keeps_the_earlier_ones(tmp_path, monkeypatch, capsys):
    from kerasbench import summary

    repro = tmp_path / "repro.py"
    repro.write_text("def iteration(ctx, model):\n    return None\n")
    real_measure = runner.measure

    def fake_measure(spec, progress=None):  # pair 1 measures a control; pair 2's repro raises in the worker
        if spec.strategy == "reuse_model":
            import dataclasses

            return real_measure(dataclasses.replace(spec, loop="control", strategy="control_noop", repro=""))
        tail = ["Traceback (most recent call last):", f'  File "{spec.repro}", line 2, in iteration',
                "ValueError: boom"]
        failed = {"repeat": 0, "status": "failed", "reason": "worker exited with code 1: ValueError: boom",
                  "result": None, "environment": None, "log_tail": tail}
        return summary.make_record(spec, [failed], spec_floors(spec))

    monkeypatch.setattr(runner, "measure", fake_measure)
    path = tmp_path / "out.json"
    code, text = run_cli(["run", "--repro", str(repro), "--strategy", "reuse_model,rebuild_no_clear",
                          "--iterations", "3", "--warmup", "0", "--json", str(path), "--jobs", "1"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines()[-1] == f"kerasbench: error: Repro file {repro} failed in the worker at line 2: " \
                                           "ValueError: boom"
    assert "control_noop" in text  # printed before the error
    records = json.loads(path.read_text())["records"]
    assert [r["status"] for r in records] == ["ok", "failed"]  # before: nothing written


def test_a_full_disk_is_one_line_after_the_table_exit_1(tmp_path, monkeypatch, capsys):
    from kerasbench import session

    def full(path, payload, what="results"):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(session, "write_json", full)
    path = tmp_path / "out.json"
    code, text = run_cli(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "3",
                          "--json", str(path)])
    err = capsys.readouterr().err
    assert code == 1  # before: a traceback
    assert "control_noop" in text  # the numbers are on screen
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == f"kerasbench: error: cannot write results to {path}: No space left on device"


# ---------------------------------------------------------------- the failed worker's log, the wording


def test_a_failed_worker_log_is_read_by_its_tail_only(tmp_path):
    import tracemalloc

    with open(tmp_path / "log", "w+b") as log:
        log.write(b"x" * 100 + b"\n")
        for _ in range(20_000):
            log.write(b"noise " * 100 + b"\n")  # ~12 MiB
        log.write(b"the last line\n\n")
        tracemalloc.start()
        tail = runner._log_tail(log)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert tail[-1] == "the last line" and len(tail) == 15
    assert peak < 1 << 20  # before: the whole log in memory


def test_a_failed_worker_reports_its_last_line(fault):
    fault("raise")
    record = measure(RunSpec("control", "control_noop", iterations=2, warmup=0))
    assert record["status"] == "failed" and record["reason"].endswith("RuntimeError: injected fault")


@pytest.mark.parametrize("warmup,iterations,where", [
    (10**8, 3, "during warm-up, after warm-up iteration"),
    (0, 10**8, "after iteration"),
])
def test_a_stop_says_where_once(warmup, iterations, where):
    record = measure(RunSpec("control", "control_noop", iterations=iterations, warmup=warmup, time_limit=2,
                             probes=False))
    assert record["status"] == "stopped"
    assert record["reason"].startswith("exceeded time limit (2 s) " + where)
    assert "stopped" not in record["reason"] and "iteration iteration" not in record["reason"]
    stream = io.StringIO()
    progress = Progress(stream, 1, warmup)
    progress.start(1, "control", "control_noop", iterations)
    progress.done(record)
    assert "stopped: exceeded time limit" in stream.getvalue() and "stopped: stopped" not in stream.getvalue()


def test_a_hang_in_setup_or_the_first_iteration_says_so(fault):
    fault("hang")
    record = measure(RunSpec("control", "control_noop", iterations=3, warmup=0, time_limit=3))
    assert record["reason"] == "exceeded time limit (3 s) in the first iteration"
    record = measure(RunSpec("control", "control_noop", iterations=3, warmup=2, time_limit=3))
    assert record["reason"] == "exceeded time limit (3 s) during warm-up, before its first iteration"


def test_a_pair_skipped_without_a_worker_does_not_say_one_starts():
    stream = io.StringIO()
    progress = Progress(stream, 2, 0)
    runner.measure_pairs(RunSpec("control", "control_noop", iterations=2, warmup=0),
                         [("control", "clear_session"), ("control", "control_noop")], lambda s: 2, progress)
    lines = stream.getvalue().splitlines()
    assert not any("clear_session" in line and "starting" in line for line in lines)
    assert "[2/2] control × control_noop: starting a fresh worker" in lines


# ---------------------------------------------------------------- several pairs at once (--jobs)


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupting_a_parallel_run_ends_every_worker_and_keeps_the_finished_pairs(fault, tmp_path, signum, code):
    """--jobs 2: one pair hangs (with a child) while the others finish beside it; an interrupt ends it all."""
    pids = fault("hang", strategy="control_leak_native")
    path = tmp_path / "out.json"
    cmd = [sys.executable, "-m", "kerasbench", "run", "--loop", "control", "--jobs", "2",
           "--strategy", "control_noop,control_leak_native,control_leak_python", "--iterations", "3", "--warmup", "0",
           "--leak-kib", "64", "--json", str(path)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(read_pids(pids)) < 2 or not path.exists() or len(json.loads(path.read_text())["records"]) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        worker, child = read_pids(pids)
        assert alive(worker) and alive(child)
        started = time.monotonic()
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=2)
        ended = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
    time.sleep(0.2)  # init reaps the orphans
    assert not alive(worker) and not alive(child)
    assert proc.returncode == code and ended < 2, err
    assert "Traceback" not in err and "2 of 3 pair(s) finished before the interrupt" in err
    records = json.loads(path.read_text())["records"]
    assert [r["strategy"] for r in records] == ["control_noop", "control_leak_python"]  # in the order named
    assert all(r["status"] == "ok" and r["spec"]["jobs"] == 2 for r in records)


# ---------------------------------------------------------------- environment creation (triage, run --tf)


class _FakeEnv:
    """An asv Environment whose creation starts a child (pip, in life) and then meets `fault`."""

    name = "virtualenv-py3.11-fake"

    def __init__(self, path, fault):
        self._path, self.fault, self.created = str(path), fault, False

    def check_presence(self):
        return self.created

    def create(self):
        os.makedirs(os.path.join(self._path, "lib"), exist_ok=True)  # half made
        self.child = subprocess.Popen(["sleep", "1000"])
        if self.fault:
            raise self.fault
        self.created = True


@pytest.mark.parametrize("fault", [KeyboardInterrupt(), procs.Terminated(), RuntimeError("pip failed")])
def test_an_interrupted_environment_creation_ends_pip_and_leaves_no_half_made_folder(fault, tmp_path, monkeypatch):
    from kerasbench import environment
    from kerasbench.errors import UsageError

    env = _FakeEnv(tmp_path / "env" / "fake", fault)
    monkeypatch.setattr(environment, "environment_for", lambda config, reqs: (object(), env))
    with pytest.raises(UsageError if isinstance(fault, Exception) else type(fault)):
        environment.python_for("asv.matrix.json", {"tensorflow-cpu": "2.15.1"})
    time.sleep(0.1)
    assert not alive(env.child.pid)  # before: pip ran on after the interrupt
    assert not os.path.exists(env._path)  # before: the next triage stopped on "Directory not empty"


def test_a_half_made_environment_left_by_a_killed_run_is_removed_first(tmp_path, monkeypatch):
    from kerasbench import environment

    env = _FakeEnv(tmp_path / "env" / "fake", None)
    os.makedirs(os.path.join(env._path, "bin"))
    (Path(env._path) / "bin" / "leftover").write_text("")
    said = []
    monkeypatch.setattr(environment, "environment_for", lambda config, reqs: (object(), env))
    python, name = environment.python_for("asv.matrix.json", {"tensorflow-cpu": "2.15.1"}, said.append)
    env.child.kill()
    assert name == env.name and python == os.path.join(env._path, "bin", "python")
    assert not (Path(env._path) / "bin" / "leftover").exists()
    assert any("half-made" in s for s in said)
