"""The one owner of worker processes: starts each in its own process group and ends every group.

A worker runs in a session of its own (a terminal's Ctrl-C reaches only the parent), so the parent
must end it: at the end of its pair (with whatever user code started in it), on Ctrl-C and SIGTERM
(`interrupts`), and at exit. Descendants seen while the worker ran are ended too, even ones that
left the group (setsid) or outlived the worker.
"""

import atexit
import contextlib
import os
import signal
import subprocess
import threading
from typing import Any, Dict, Iterator, List

_lock = threading.Lock()
_live: Dict[int, "Group"] = {}  # leader pid: its group, while not yet ended


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt; exit code 143."""

    code = 143


def exit_code(interrupt: BaseException) -> int:
    """The shell's code for an interrupt: 130 for Ctrl-C (SIGINT), 143 for SIGTERM."""
    return getattr(interrupt, "code", 130)


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
    """Start `args` as the leader of a new process group (a session of its own) owned here."""
    proc = subprocess.Popen(args, start_new_session=True, **popen)
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


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


@contextlib.contextmanager
def interrupts() -> Iterator[None]:
    """While inside: SIGINT raises KeyboardInterrupt, SIGTERM Terminated; on the way out every group ends.

    Only the main thread can take signals; elsewhere this only ends the groups on the way out.
    """
    previous = {}
    if threading.current_thread() is threading.main_thread():
        # SIGINT too: a shell starts a background job with SIGINT ignored, and `kill -INT` must still stop it
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.default_int_handler)
        previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, _raise_terminated)
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
