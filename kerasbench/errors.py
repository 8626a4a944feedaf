"""Errors a user can act on. The CLI prints them on one line and exits 2."""

from __future__ import annotations

import re
from typing import Iterable, Optional, Sequence


class UsageError(Exception):
    """A user mistake: an unknown name, a bad value, an unwritable path, a bad file."""


class Skip(Exception):
    """This (loop shape, strategy) pair cannot run here; the message says why."""


def unknown(kind: str, value: object, valid: Iterable[str]) -> UsageError:
    """The error for a name that is not in a registry, listing the valid ones, the nearest first when some are
    close ("Did you mean sweep?")."""
    import difflib

    valid = sorted(valid)
    near = difflib.get_close_matches(str(value), valid, n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(near)}?" if near else ""
    return UsageError(f"Unknown {kind}. Received: {kind.split()[0]}={value!r}.{hint} "
                      f"Expected one of: {', '.join(valid)}.")


# A line of a library's log, not a message of the worker's own: TF's C++ log (2024-05-01 12:00:00.000: W tf/...] and
# absl's I0501 12:00:00.000  123 file.cc:1] ...), Python logging of TF, absl or Keras (WARNING:tensorflow:...), absl's
# note before its log is set up, cpu_feature_guard's second line.
_LOG_NOISE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?: [IWEF] "
                        r"|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ "
                        r"|(DEBUG|INFO|WARNING|ERROR|CRITICAL|FATAL):(tensorflow|absl|keras|h5py|jax)\b"
                        r"|WARNING: All log messages before absl::InitializeLog"
                        r"|To enable the following instructions: .*rebuild TensorFlow")
# The last line of a Python traceback: the exception's (dotted) class name, then its message.
_EXCEPTION = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Fault|Failure)(?::.*)?")
_TRACEBACK = "Traceback (most recent call last):"
_OWN = ("kerasbench:", "Fatal Python error:")  # kerasbench's messages; the interpreter's crash (faulthandler's first)


def worker_said(lines: Sequence[str]) -> Optional[str]:
    """The line of a failed worker's log that says why it failed (worker_message's first three kinds: kerasbench's
    own message, a Python exception's, a fatal error's), None when it printed none: a worker that the measured code
    ended itself (os._exit(3) prints nothing, nor does sys.exit(3)), whose log ends in a library's lines."""
    lines = [line.rstrip() for line in lines if line.strip()]
    after = None
    header = max((i for i, line in enumerate(lines) if line.strip() == _TRACEBACK), default=None)
    if header is not None:
        after = next((i for i in range(header + 1, len(lines))
                      if not lines[i][:1].isspace() and not _LOG_NOISE.match(lines[i])), None)
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i].strip()
        if i == after or line.startswith(_OWN) or (_EXCEPTION.fullmatch(line) and not _LOG_NOISE.match(line)):
            return line
    return None


def exited_without_error(code: int) -> str:
    """Why a worker that exited with `code` (> 0) printing no error failed: the measured code ended the process."""
    return (f"the worker exited with code {code} and printed no error: the measured code ended its process "
            f"(sys.exit({code}) or os._exit({code}))")


def worker_message(lines: Sequence[str]) -> str:
    """The line of a failed worker's log that says why it failed: the last one that is kerasbench's own message, a
    Python exception's (the line after a traceback's frames, or one naming an ...Error) or a fatal error's, not a
    library's log line printed after it (TF logs at exit); else the last line that is not such noise, else the last."""
    said = worker_said(lines)  # the exception line of the last traceback, kerasbench's own, a fatal error's
    if said is not None:
        return said
    lines = [line.rstrip() for line in lines if line.strip()]
    quiet = [line.strip() for line in lines if not _LOG_NOISE.match(line)]
    return (quiet or [line.strip() for line in lines] or ["no output"])[-1]


def repro_failed(path: str, record: dict) -> UsageError:
    """The error for a repro file (or body) whose code raised in the worker: the file, its line, the exception."""
    repeat = next((r for r in record["repeats"] if r["status"] == "failed"), {})
    tail = repeat.get("log_tail") or []
    where = [line.strip() for line in tail if line.strip().startswith(f'File "{path}"')]
    line = where[-1].split(", ")[1] if where else ""
    error = (worker_said(tail) if tail else None) or repeat.get("reason") or record["reason"]
    body = (record.get("spec") or {}).get("body")
    if body:  # kerasbench.measure(body=...): the file is kerasbench's, generated and gone; the function is the user's
        return UsageError(f"The body {body} failed in the worker: {error}")
    return UsageError(f"Repro file {path} failed in the worker{' at ' + line if line else ''}: {error}")
