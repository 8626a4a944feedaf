"""Fault suite, process lifecycle (issue #15, classes 3, 4, 5, 9; issue #26, round two: processes left behind,
wrong exit codes, limits, wording): interrupts, lingering workers, exit codes, results kept through later errors;
the log tail and the wording of stops. Control loops, TF-free bodies and fakes, no TF.

The faults are injected into the worker by a sitecustomize on PYTHONPATH (the worker inherits the environment):
it patches the control loop's iteration to start a non-daemon thread, spawn `sleep 1000`, hang, raise, raise and
then log like TF at exit, or run slowly. KB_NO_TF=1 keeps a repro (body=) worker from importing TF.
"""

import io
import json
import os
import shlex
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
from kerasbench.rule import spec_floors

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
        if fault == "slow":
            time.sleep(0.05)
        if fault == "raise":
            raise RuntimeError("injected fault")
        if fault == "noise":  # TF logs at exit, after the traceback
            import atexit

            atexit.register(lambda: sys.stderr.write(
                "2024-05-01 12:00:00.000000: W tensorflow/core/framework/local_rendezvous.cc:404] Local rendezvous "
                "is aborting with status: OUT_OF_RANGE: End of sequence\\n"
                "W0000 00:00:1714560000.123456   12345 op_level_cost_estimator.cc:699] Error in PredictCost()\\n"))
            raise RuntimeError("injected fault")
        return run(self, model, i, step)

    loops.Control.run = faulty
if os.environ.get("KB_NO_TF"):  # a repro (body=) worker that never imports TF
    from kerasbench import _compat

    _compat.tf = lambda: None
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


def _wait_for_pids(path, n, proc, limit=120):
    deadline = time.monotonic() + limit
    while len(read_pids(path)) < n:
        if proc.poll() is not None or time.monotonic() >= deadline:
            # the run's worker hangs by design: end it before reading its output (communicate alone waits for ever)
            late = proc.poll() is None
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"{'no' if late else 'the run ended before its'} {n} pid(s) in {limit} s (exit "
                        f"{proc.returncode}): {err[-2000:]}")
        time.sleep(0.05)
    return read_pids(path)


def alive(pid):
    """Running and not a zombie (a killed orphan is a zombie until init reaps it)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def run_cli(argv):
    out = io.StringIO()
    return main(argv, out=out), out.getvalue()



def default_signals() -> None:
    """In the child before exec: SIGHUP and SIGINT at their defaults, whatever this test run inherited (under nohup,
    or a shell's background job, they arrive ignored, and kerasbench keeps an ignored SIGHUP ignored, as nohup asks)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)

# ---------------------------------------------------------------- class 3: interrupts end every worker


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_interrupt_ends_every_worker_and_keeps_the_finished_pairs(fault, tmp_path, signum, code):
    pids = fault("hang", strategy="control_leak_native")
    path = tmp_path / "out.json"
    cmd = [sys.executable, "-m", "kerasbench", "run", "--loop", "control",
           "--strategy", "control_noop,control_leak_native", "--iterations", "3", "--warmup", "0",
           "--leak-kib", "64", "--json", str(path), "--jobs", "1"]  # one at a time: the first finishes first
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_signals)
    try:
        worker, child = _wait_for_pids(pids, 2, proc)  # the hanging worker and the `sleep` it started
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
    assert any(line.startswith("[2/2] control × control_noop: starting a fresh worker (1 of 2 done, ")
               for line in lines), lines


# ---------------------------------------------------------------- several pairs at once (--jobs)


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_interrupting_a_parallel_run_ends_every_worker_and_keeps_the_finished_pairs(fault, tmp_path, signum, code):
    """--jobs 2: one pair hangs (with a child) while the others finish beside it; an interrupt ends it all."""
    pids = fault("hang", strategy="control_leak_native")
    path = tmp_path / "out.json"
    cmd = [sys.executable, "-m", "kerasbench", "run", "--loop", "control", "--jobs", "2",
           "--strategy", "control_noop,control_leak_native,control_leak_python", "--iterations", "3", "--warmup", "0",
           "--leak-kib", "64", "--json", str(path)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_signals)
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


# ---------------------------------------------------------------- issue #26, processes left behind


BODY = '''
import os, time


def body():  # where it runs, then a long iteration (TF's can take minutes)
    with open(os.environ["KB_BODY_PIDS"], "a") as f:
        f.write(f"{os.getpid()}\\n")
    time.sleep(1000)
'''

MEASURE_BODY = '''
import sys

sys.path.insert(0, sys.argv[1])
import kerasbench
import kb_hanging_body

kerasbench.measure(body=kb_hanging_body.body, iterations=3, warmup=0, floor_kib=64, strategies=sys.argv[2])
'''


@pytest.mark.parametrize("signum,strategy", [(signal.SIGTERM, "reuse_model"), (signal.SIGHUP, "reuse_model"),
                                             (signal.SIGKILL, "reuse_model"), (signal.SIGKILL, "process_isolation")])
def test_a_program_ended_inside_measure_body_ends_its_worker_and_removes_its_folder(tmp_path, signum, strategy):
    """The API installs no CLI handler: SIGTERM or SIGHUP raise inside measure() so the worker ends and measure's
    temporary folder goes; kill -9 cannot be caught, but the worker dies with its parent (PR_SET_PDEATHSIG), and
    process_isolation's child (where the body runs then) with the worker."""
    (tmp_path / "kb_hanging_body.py").write_text(BODY)
    (tmp_path / "script.py").write_text(MEASURE_BODY)
    temp, pids = tmp_path / "tmp", tmp_path / "pids"
    temp.mkdir()
    fault = tmp_path / "fault"
    fault.mkdir()
    (fault / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(fault), str(ROOT)]), KB_NO_TF="1",
               KB_BODY_PIDS=str(pids), TMPDIR=str(temp))
    proc = subprocess.Popen([sys.executable, str(tmp_path / "script.py"), str(tmp_path), strategy], cwd=tmp_path,
                            preexec_fn=default_signals,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        worker = _wait_for_pids(pids, 1, proc)[0]
        assert alive(worker) and [p.name for p in temp.iterdir()] != []
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    time.sleep(0.2)  # init reaps the orphan
    assert not alive(worker)  # before: a worker orphaned in its first iteration ran on (a TF one holds 0.5 GB)
    if signum != signal.SIGKILL:
        assert proc.returncode != 0 and f"{signal.Signals(signum).name}: kerasbench ended its workers" in err
        assert list(temp.rglob("kerasbench-body-*")) == []  # before: kerasbench-body-* left behind (in the
        # user's private folder, $TMPDIR/kerasbench-<uid>, since #40: it stays, empty)


def test_kill_9_of_the_command_takes_its_worker_with_it(fault, tmp_path):
    pids = fault("hang")
    cmd = [sys.executable, "-m", "kerasbench", "run", "--loop", "control", "--strategy", "control_noop",
           "--iterations", "3", "--warmup", "0", "--floor-kib", "64"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker, child = _wait_for_pids(pids, 2, proc)
    try:
        proc.kill()
        proc.wait(timeout=5)
        deadline = time.monotonic() + 2
        while alive(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(worker)  # before: it ran on, in its own session, until its loop ended
    finally:
        for pid in (worker, child):  # what user code started in the worker is not promised (docs/guarantees.md)
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_worker_whose_parent_died_before_it_asked_ends_at_once():
    code = "from kerasbench import procs; procs.die_with_parent(1); print('ran on')"  # pid 1 is not its parent
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "ran on" not in proc.stdout


def test_handlers_the_program_chose_are_kept_and_restored(monkeypatch):
    def mine(signum, frame):
        pass

    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # nohup
        signal.signal(signal.SIGTERM, mine)
        with procs.interrupts():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN  # nohup kerasbench run: goes on
        with procs.terminations():
            assert signal.getsignal(signal.SIGTERM) is mine and signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        with procs.terminations():
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, mine)
            with procs.terminations():  # nested: the outer one's stay
                handler = signal.getsignal(signal.SIGHUP)
            assert signal.getsignal(signal.SIGHUP) is handler
            with pytest.raises(procs.Hangup):
                os.kill(os.getpid(), signal.SIGHUP)
                time.sleep(1)
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN  # the cleanup is not cut short by a second one
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL and signal.getsignal(signal.SIGHUP) is signal.SIG_DFL
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


# ---------------------------------------------------------------- issue #26, exit codes: a closed output


def _closed_pipe():
    """A pipe whose reader is gone: every write to it fails with EPIPE."""
    read, write = os.pipe()
    os.close(read)
    return write


def test_a_closed_stdout_keeps_the_records_and_exits_141(tmp_path):
    path = tmp_path / "out.json"
    write = _closed_pipe()
    try:
        proc = subprocess.run([sys.executable, "-m", "kerasbench", "run", "--loop", "control", "--strategy",
                               "control_noop,control_leak_native", "--iterations", "3", "--warmup", "0",
                               "--floor-kib", "64", "--json", str(path), "--jobs", "1"],
                              cwd=ROOT, stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert proc.returncode == 141, proc.stderr  # before: 0
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert f"2 of 2 pair(s) finished before the output closed; kept in {path}" in proc.stderr
    assert [r["strategy"] for r in json.loads(path.read_text())["records"]] == ["control_noop", "control_leak_native"]
    write = _closed_pipe()
    try:  # a command that only prints: the same code, and no 'Exception ignored' (exit 120) at the interpreter's exit
        listed = subprocess.run([sys.executable, "-m", "kerasbench", "list"], cwd=ROOT, stdout=write,
                                stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write)
    assert listed.returncode == 141 and listed.stderr == ""


def test_a_progress_reader_gone_mid_run_ends_the_worker_keeps_the_finished_pairs_exits_141(fault, tmp_path):
    """`kerasbench run ... 2>&1 | head`: the second pair is running when the reader goes."""
    import re

    pids = fault("slow", strategy="control_leak_native")
    path = tmp_path / "out.json"
    read, write = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "kerasbench", "run", "--loop", "control", "--strategy",
                             "control_noop,control_leak_native", "--iterations", "400", "--warmup", "0",
                             "--floor-kib", "64", "--leak-kib", "4", "--json", str(path), "--jobs", "1"],
                            cwd=ROOT, stdout=write, stderr=write)
    os.close(write)
    try:
        with os.fdopen(read, "rb", buffering=0) as pipe:
            said = b""
            while not re.search(rb"\[1/2\] control \xc3\x97 control_noop: (?!starting)", said):  # its outcome
                chunk = pipe.read(4096)
                assert chunk, said
                said += chunk
            worker = _wait_for_pids(pids, 1, proc)[0]
        code = proc.wait(timeout=30)  # its next progress line meets the closed pipe
    finally:
        if proc.poll() is None:
            proc.kill()
    time.sleep(0.2)
    assert code == 141  # before: 0, and nothing written
    assert not alive(worker)
    records = json.loads(path.read_text())["records"]
    assert [r["strategy"] for r in records] == ["control_noop"] and records[0]["status"] == "ok"


# ---------------------------------------------------------------- issue #26, limits


def test_the_default_memory_cap_is_shared_by_the_pairs_that_run_at_once(monkeypatch):
    from kerasbench.spec import shared_memory_cap
    from kerasbench.units import GIB

    monkeypatch.delenv("KERASBENCH_MEMORY_CAP", raising=False)
    seen = []

    def fake_measure(spec, progress=None):
        seen.append(spec)
        return runner.summary.make_record(spec, [{"repeat": 0, "status": "skipped", "reason": "fake", "result": None,
                                                  "environment": None}], spec_floors(spec))

    monkeypatch.setattr(runner, "measure", fake_measure)
    monkeypatch.setattr(runner, "_free_memory", lambda: 1 << 50)
    base = RunSpec("control", "control_noop", iterations=3, warmup=0, floor=0.0, jobs=40).validate()
    assert base.memory_cap == shared_memory_cap(40)
    # one pair that runs (clear_session is skipped without a worker): alone, half the RAM; before: ÷ 40
    runner.measure_pairs(base, [("control", "clear_session"), ("control", "control_noop")], lambda s: 3)
    assert {(s.jobs, s.memory_cap) for s in seen} == {(1, shared_memory_cap(1))}
    seen.clear()
    runner.measure_pairs(base, [("control", "control_noop"), ("control", "control_leak_native"),
                                ("control", "control_leak_python")], lambda s: 3)
    assert {(s.jobs, s.memory_cap) for s in seen} == {(3, shared_memory_cap(3))}
    seen.clear()
    given = RunSpec("control", "control_noop", iterations=3, warmup=0, floor=0.0, jobs=40, memory_cap=GIB).validate()
    runner.measure_pairs(given, [("control", "control_noop")], lambda s: 3)
    assert [(s.jobs, s.memory_cap) for s in seen] == [(1, GIB)]  # a cap given is the cap used


def test_a_worker_stopped_by_the_memory_cap_keeps_its_readings_up_to_the_stop(monkeypatch):
    import re

    from kerasbench.units import KIB, MIN_MEMORY_CAP

    spec = RunSpec("control", "control_leak_native", iterations=10**6, warmup=0, memory_cap=MIN_MEMORY_CAP,
                   leak_bytes=256 * KIB, floor=64 * KIB, time_limit=60)
    record = measure(spec)
    assert record["status"] == "stopped" and record["reason"].startswith("exceeded memory cap")
    done = int(re.search(r"after iteration (\d+)/", record["reason"])[1])
    partial = record["repeats"][0]["partial_rss"]
    assert done > 20 and len(partial) == done  # before: 1 reading of sub-millisecond iterations
    assert record["summary"]["verdict"] == "grows"  # judged on them: 256 KiB/iteration
    monkeypatch.setattr(runner, "PARTIAL_RSS_KEPT", 20)  # bounded: the last readings up to the stop
    record = measure(spec)
    assert len(record["repeats"][0]["partial_rss"]) == 20 and record["status"] == "stopped"


# ---------------------------------------------------------------- issue #26, wording


def test_a_failed_worker_reason_is_its_exception_not_the_tf_log_after_it(fault):
    fault("noise")
    record = measure(RunSpec("control", "control_noop", iterations=2, warmup=0, floor=0.0))
    assert record["status"] == "failed"
    assert record["reason"] == "worker exited with code 1: RuntimeError: injected fault"  # before: TF's PredictCost
    assert "PredictCost" in record["repeats"][0]["log_tail"][-1]  # the tail itself is untouched


@pytest.mark.parametrize("lines,said", [
    (["Traceback (most recent call last):", '  File "x.py", line 1, in <module>', "StopIteration",
      "WARNING:tensorflow:5 out of the last 5 calls triggered tf.function retracing",
      "I0000 00:00:1714560000.123456   12345 cuda_executor.cc:1015] successful NUMA node read"], "StopIteration"),
    (["x = 1", "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor",
      "2024-05-01 12:00:00.000000: I tensorflow/core/platform/cpu_feature_guard.cc:182] This TensorFlow binary is "
      "optimized to use available CPU instructions", "To enable the following instructions: AVX2 FMA, in other "
      "operations, rebuild TensorFlow with the appropriate compiler flags."],
     "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor"),
    (["kerasbench: its own message", "WARNING:absl:Compiled the loaded model"], "kerasbench: its own message"),
    (["Fatal Python error: Segmentation fault", "", "Current thread 0x00007f (most recent call first):",
      '  File "x.py", line 3 in f'], "Fatal Python error: Segmentation fault"),
    (["some output", "WARNING:tensorflow:noise"], "some output"),
    (["WARNING:tensorflow:only noise"], "WARNING:tensorflow:only noise"),
    ([], "no output"),
])
def test_the_reason_of_a_failed_worker_is_the_line_that_says_why(lines, said):
    from kerasbench.errors import worker_message

    assert worker_message(lines) == said


def test_a_huge_number_is_refused_as_typed_not_as_infinity(capsys):
    code, _ = run_cli(["run", "--loop", "control", "--strategy", "control_noop", "--floor-kib", "1e308"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "Received: '1e308'" in err and "<= 1e+290" in err and "inf" not in err  # before: 'Received: inf'


def test_a_failed_asv_publish_says_its_last_line(monkeypatch):
    from kerasbench import dashboard
    from kerasbench.errors import UsageError

    failed = subprocess.CompletedProcess([], 1, "", "Traceback (most recent call last):\n  ...\n"
                                         "asv.util.UserError: No results found\n")
    monkeypatch.setattr(dashboard.subprocess, "run", lambda *a, **k: failed)
    with pytest.raises(UsageError) as raised:
        dashboard.publish_dashboard(str(ROOT / "asv.conf.json"))
    config = str(ROOT / "asv.conf.json")
    said = "asv publish failed (exit 1): asv.util.UserError: No results found"  # before: ['…']
    # the command as a command line (shlex.join), not a Python list (issue #26, round two)
    command = shlex.join([sys.executable, "-m", "asv", "publish", "--config", config])
    assert str(raised.value) == f"{said} (command: {command})"


# ---------------------------------------------------------------- issue #40: nothing a user made is replaced by less


def _linear_controls(allocator, runs, iterations, rates, heaps=("native", "python"), warmup=2, progress=None,
                     tf_control=False, jobs=1, python=""):
    """run_controls' answer without workers: flat noop, each leak exactly its rate, a little noise."""
    import random

    rng = random.Random(1)
    n = max(iterations)

    def line(rate):
        return [1e8 + rate * i + rng.uniform(-1, 1) for i in range(n)]

    cells = {"noop": {0: [line(0) for _ in range(runs)]}, **{h: {r: [line(r) for _ in range(runs)] for r in rates}
                                                             for h in heaps}}
    return {"rss": cells, "heap": cells}, allocator


def test_a_calibration_made_on_the_fly_adds_to_the_users_file(tmp_path, monkeypatch):
    """Before (read in the code): a run below the smallest calibrated count calibrated that count on the fly and
    saved it over the user's file (calibration_store.save), its `kerasbench calibrate` counts gone."""
    from kerasbench import calibration, calibration_store, session

    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path))
    monkeypatch.setattr(session, "run_controls", _linear_controls)
    report = {"iterations": [8, 2000], "rates": [4096], "by_iterations": {"8": {"floor": 65536.0},
                                                                          "2000": {"floor": 2048.0}}}
    mine = {"schema": 2, "protocol": 8, "key": calibration_store.environment_key("glibc"), "host": "h",
            "allocator": "glibc",
            "allocator_detected": "glibc", "created": "2026-01-01T00:00:00Z", "runs": 20, "warmup": 2, "jobs": 1,
            "seconds": 900.0, "load": None, "floors": {"8": 65536.0, "2000": 2048.0},
            "heap_floors": {"8": 32768.0, "2000": 2048.0}, "report": report, "heap_report": report}
    path = calibration_store.path_for("glibc")
    calibration_store.save(mine, path)
    monkeypatch.setattr(calibration, "AUTO_RUNS", 3)
    assert session.ensure_calibration("glibc", 5, io.StringIO(), jobs=1) is None
    saved = json.loads(Path(path).read_text())
    assert list(saved["floors"]) == ["4", "5", "8", "2000"]  # its own counts added, mine kept
    assert saved["floors"]["8"] == 65536.0 and saved["floors"]["2000"] == 2048.0
    assert saved["heap_floors"]["2000"] == 2048.0 and "5" in saved["heap_floors"]
    assert saved["runs"] == 20 and saved["created"] == mine["created"]  # the file is still mine
    assert saved["added"][0]["counts"] == [4, 5] and saved["added"][0]["runs"] == 3
    assert set(saved["report"]["by_iterations"]) == {"4", "5", "8", "2000"}
    assert calibration_store.find("glibc", 5)[2] == 5 and calibration_store.find("glibc", 10)[2] == 8  # both read back


# ---------------------------------------------------------------- a full disk (triage of nightlies filled one)


def test_an_environment_is_not_created_on_a_disk_without_room(tmp_path, monkeypatch):
    """Eight nightly environments and their wheels filled this project's disk mid-triage: under the free space an
    environment needs, creation stops before the installer starts, one line naming the folder and the way on."""
    import collections
    import shutil

    from kerasbench import environment, install
    from kerasbench.errors import UsageError

    env = _FakeEnv(tmp_path / "env" / "fake", None)
    monkeypatch.setattr(environment, "environment_for", lambda config, reqs: (object(), env))
    usage = collections.namedtuple("usage", "total used free")
    seen = []
    monkeypatch.setattr(shutil, "disk_usage", lambda p: seen.append(p) or usage(100 * 2**30, 97 * 2**30, 3 * 2**30))
    monkeypatch.delenv(install.MIN_FREE_VAR, raising=False)
    with pytest.raises(UsageError) as e:
        environment.python_for("asv.matrix.json", {"tensorflow-cpu": "2.15.1"})
    text = str(e.value)
    assert "\n" not in text and env.name in text and "3.0 GiB free on " + str(tmp_path) in text
    assert "under the 4 GiB" in text and "KERASBENCH_MIN_FREE_GIB=0" in text
    assert "`uv cache clean tf-nightly-cpu` for the nightlies' wheels" in text  # what uv cache prune keeps
    assert seen == [str(tmp_path)]  # the nearest folder that exists: env/ is not made yet
    assert not os.path.exists(env._path) and not hasattr(env, "child")  # nothing started, nothing half-made
    assert os.listdir(tmp_path / "env.locks") == ["fake.lock"]  # the creation's lock, beside env/

    monkeypatch.setenv(install.MIN_FREE_VAR, "2.5")  # enough room at a smaller need: created
    python, name = environment.python_for("asv.matrix.json", {"tensorflow-cpu": "2.15.1"})
    env.child.kill()
    assert name == env.name and env.created


@pytest.mark.parametrize("value, need", [("0", 0.0), ("", 4.0), (" 8 ", 8.0)])
def test_the_free_space_an_environment_needs_reads_its_variable(monkeypatch, value, need):
    from kerasbench import install

    monkeypatch.setenv(install.MIN_FREE_VAR, value)
    assert install.min_free_gib() == need


@pytest.mark.parametrize("value", ["lots", "-1", "nan", "inf"])
def test_a_bad_free_space_variable_is_a_one_line_error(monkeypatch, value):
    from kerasbench import install
    from kerasbench.errors import UsageError

    monkeypatch.setenv(install.MIN_FREE_VAR, value)
    with pytest.raises(UsageError, match=r"^\$KERASBENCH_MIN_FREE_GIB=.* is not a size in GiB"):
        install.min_free_gib()


# ---------------------------------------------------------------- issue #61: a worker the measured code ended


@pytest.mark.parametrize("how, said", [
    ("sys.exit(3)", "kerasbench: the measured code called sys.exit(3)"),
    ("os._exit(3)", "the worker exited with code 3 and printed no error: the measured code ended its process "
                    "(sys.exit(3) or os._exit(3))"),
])
def test_a_repro_that_exits_is_named_by_its_exit_not_a_library_s_last_log_line(how, said, tmp_path, capsys):
    """Before: the reason was the last TF log line the worker printed (oneDNN's, cpu_feature_guard's)."""
    repro = tmp_path / "exits.py"
    repro.write_text("import os\nimport sys\n\n\ndef iteration(ctx, model):\n"
                     "    print('2026-01-01 00:00:00.000000: I tensorflow/core/x.cc:1] a TF log line', file=sys.stderr,"
                     " flush=True)\n"
                     f"    {how}\n")
    code = main(["run", "--repro", str(repro), "--strategy", "reuse_model", "--iterations", "3", "--warmup", "0",
                 "--repeats", "1", "--floor-kib", "64"], out=io.StringIO())
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and err == f"kerasbench: error: Repro file {repro} failed in the worker: {said}", err
