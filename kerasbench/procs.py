"""The one owner of worker processes: starts each in its own process group and ends every group.

A worker runs in a session of its own (a terminal's Ctrl-C reaches only the parent), so the parent
must end it: at the end of its pair (with whatever user code started in it), on Ctrl-C, SIGTERM and
SIGHUP (`interrupts` for the command line, `terminations` for the API), and at exit. Descendants seen
while the worker ran are ended too, even ones that left the group (setsid) or outlived the worker.
A parent that dies without any of that (kill -9) takes its workers with it: each asks the kernel
for SIGKILL when its parent dies (`die_with_parent`, Linux).
"""

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import threading
from typing import Any, Dict, Iterator, List

_lock = threading.Lock()
_live: Dict[int, "Group"] = {}  # leader pid: its group, while not yet ended


# The worker's environment variable that names its parent (the pid that started it), read and removed by the worker
# at its start (`die_with_parent`); not on the allow-list of what a record keeps (worker.ENV_NAMES, ENV_PATTERNS).
PARENT_VAR = "_KERASBENCH_PARENT_PID"
PR_SET_PDEATHSIG = 1  # linux/prctl.h


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt; exit code 143."""

    code = 143
    signal_name = "SIGTERM"


class Hangup(Terminated):
    """SIGHUP (a closed terminal, a dropped ssh connection), handled as SIGTERM is; exit code 129."""

    code = 129
    signal_name = "SIGHUP"


def exit_code(interrupt: BaseException) -> int:
    """The shell's code for an interrupt: 130 for Ctrl-C (SIGINT), 143 for SIGTERM, 129 for SIGHUP."""
    return getattr(interrupt, "code", 130)


def signal_name(interrupt: BaseException) -> str:
    """The signal that raised `interrupt`: SIGINT (Ctrl-C), SIGTERM or SIGHUP."""
    return getattr(interrupt, "signal_name", "SIGINT")


class Group:
    """A worker process (the leader of its own process group) and the descendants seen under it."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.seen: List[Any] = []  # psutil.Process of descendants, kept so orphans can be found again
        self._seen_pids: set = set()

    @property
    def pid(self) -> int:
        """The leader's pid, which is also the group id."""
        return self.proc.pid

    def watch(self, descendants: List[Any]) -> None:
        """Remember descendants (psutil.Process) seen now: `end` kills them even if they left the group."""
        for child in descendants:
            if child.pid not in self._seen_pids:
                self._seen_pids.add(child.pid)
                self.seen.append(child)

    def end(self) -> None:
        """Kill the whole group and every descendant seen, then reap the leader; safe to call twice."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # the group outlives its leader while members live
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        for child in self.seen:  # psutil refuses a pid that was reused by another process
            with contextlib.suppress(Exception):
                child.kill()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)
        with _lock:
            _live.pop(self.proc.pid, None)


def start(args: List[str], **popen: Any) -> Group:
    """Start `args` as the leader of a new process group (a session of its own) owned here.

    Its environment names this process (PARENT_VAR): a kerasbench worker then dies with it (`die_with_parent`), or
    rather with the thread that started it (the kernel's rule), so a worker is started by the thread that waits for it.
    """
    env = popen.pop("env", None)
    env = dict(os.environ if env is None else env, **{PARENT_VAR: str(os.getpid())})
    proc = subprocess.Popen(args, start_new_session=True, env=env, **popen)
    group = Group(proc)
    with _lock:
        _live[proc.pid] = group
    return group


def live() -> List[Group]:
    """The groups started and not yet ended."""
    with _lock:
        return list(_live.values())


def end_all() -> None:
    """End every group still live (on an interrupt, at exit)."""
    for group in live():
        group.end()


atexit.register(end_all)


def die_with_parent(parent: Any = None) -> None:
    """In a worker, first thing: the kernel sends it SIGKILL when `parent` (a pid, or its text) dies, however it dies.

    `parent` defaults to PARENT_VAR of the environment (removed from it: the worker's own children must not read
    it). A parent gone already (it died before this ran) ends this process now. Linux only (prctl); elsewhere, and
    without a parent given, nothing happens.
    """
    if parent is None:
        parent = os.environ.pop(PARENT_VAR, None)
    if not parent or not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return
    except (OSError, AttributeError):
        return
    if os.getppid() != int(parent):  # the parent died before the request: it will not be signalled
        os._exit(1)


def _raise_terminated(signum: int, frame: Any) -> None:
    kind = Hangup if signum == getattr(signal, "SIGHUP", None) else Terminated
    raise kind(f"{kind.signal_name}: kerasbench ended its workers")  # what an uncaught one says, last


def _terminating_signals() -> List[int]:
    return [signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])


@contextlib.contextmanager
def interrupts() -> Iterator[None]:
    """While inside: SIGINT raises KeyboardInterrupt, SIGTERM Terminated, SIGHUP Hangup; on the way out all groups end.

    Only the main thread can take signals; elsewhere this only ends the groups on the way out. A SIGHUP ignored
    when this starts (`nohup kerasbench run ...`) stays ignored.
    """
    previous = {}
    if threading.current_thread() is threading.main_thread():
        # SIGINT too: a shell starts a background job with SIGINT ignored, and `kill -INT` must still stop it
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.default_int_handler)
        for signum in _terminating_signals():
            if signum == signal.SIGTERM or signal.getsignal(signum) is not signal.SIG_IGN:
                previous[signum] = signal.signal(signum, _raise_terminated)
    try:
        yield
    finally:
        for signum in previous:  # a second Ctrl-C must not cut the cleanup short
            signal.signal(signum, signal.SIG_IGN)
        try:
            end_all()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


@contextlib.contextmanager
def terminations() -> Iterator[None]:
    """While inside (in the main thread): SIGTERM raises Terminated and SIGHUP Hangup where they would kill the process
    outright, so that `finally` blocks run (the workers end, kerasbench.measure's temporary folder goes) before it ends.

    For the API (kerasbench.measure, kerasbench.testing): a signal the program handles or ignores itself is left to
    it, and so is one inside `interrupts` (the command line's). Nested use changes nothing. The previous handlers
    are back on the way out.
    """
    previous: Dict[int, Any] = {}

    def once(signum: int, frame: Any) -> None:  # the cleanup this starts must not be cut short by a second signal
        for taken in previous:
            signal.signal(taken, signal.SIG_IGN)
        _raise_terminated(signum, frame)

    if threading.current_thread() is threading.main_thread():
        for signum in _terminating_signals():
            if signal.getsignal(signum) is signal.SIG_DFL:
                previous[signum] = signal.signal(signum, once)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
