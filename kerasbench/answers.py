"""Each change of the atlas answered: the triage, attribution and ablation its list names, run and kept.

The atlas marks a change between consecutive columns (▲ worse, ▼ better; a flip with a side undecided, ◆, is not a
change) and lists, per change, the commands that explain it (atlas.commands: which release, which package, which
cleanup steps). `kerasbench atlas RECORDS --answer --config asv.matrix.json` runs them (atlas.questions): each
command once (an ablation of a loop on a release serves every change of that loop there), each in a process of its
own, one answer for each change first, then the most telling (atlas.first_answers), and keeps per command its
answer (triage's and attribute's "Answer: …" or "No answer …" line, ablate's conclusion), its exit status, its wall
and when it finished, in FILE beside atlas.json.
The file is written after each command, so an interrupt keeps what finished, and a second call goes on where the
first stopped (a command answered is not run again). The atlas page shows each answer beside its command; a
command that could not answer shows why (its own last line).
"""

from __future__ import annotations

import datetime
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, TextIO, Tuple

from . import __version__
from .errors import UsageError

FILE = "answers.json"  # in the atlas's folder, beside atlas.json: `kerasbench atlas` shows what it holds
SCHEMA = "kerasbench-answers"
VERSION = 1
TAIL = 3  # lines of a command's output kept when it gave no answer line: why it could not
DISK_FULL = "stopped: the disk is full"  # then "N of M left for another call": .ci/answers makes room on it
# The command's own marks of its answer: triage and attribute print one line, a nightly triage the commits between
# the two builds it ends on, a triage whose ends differ in more than the bisected package says so; ablate its
# conclusion's sentences.
ANSWER_PREFIXES = ("Answer:", "No answer", "TF commits between", "Keras commits between", "Not TF's alone",
                   "Not Keras's alone")
ABLATE_CONCLUSION = ("no cleanup:", "The full cleanup", "Flat variants:", "Necessary (", "Sufficient (", "Alone, ")


@dataclass(frozen=True)
class Question:
    """One command of the atlas's lists, with what it asks and the changes (loop × strategy, TF p → v) it explains."""

    what: str
    command: str
    changes: Tuple[str, ...]
    first: bool = False  # it answers a change with no answer yet (atlas.first_answers)


def answer_text(command: str, output: str) -> str:
    """What a command's output answers: triage's and attribute's answer line(s), ablate's conclusion; '' if none."""
    lines = [line.strip() for line in output.splitlines()]
    if shlex.split(command)[1:2] == ["ablate"]:
        return " ".join(line for line in lines if line.startswith(ABLATE_CONCLUSION))
    return " ".join(line for line in lines if line.startswith(ANSWER_PREFIXES))


def _argv(command: str, config: Optional[str], extra: Sequence[str]) -> List[str]:
    words = shlex.split(command)
    if words[:1] != ["kerasbench"]:
        raise UsageError(f"Not a kerasbench command: {command!r}.")
    return [sys.executable, "-m", "kerasbench", *words[1:], *(["--config", config] if config else []), *extra]


def _run(argv: List[str]) -> Tuple[int, str]:
    """(exit status, stdout and stderr together) of one command, in its own process group (procs: an interrupt ends
    it and its workers)."""
    from . import procs

    group = procs.start(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = group.proc.communicate()
        return group.proc.returncode, output
    finally:
        group.end()


def read(path: str) -> dict:
    """An answers file (or an empty one when `path` does not exist); a one-line UsageError if it is not one."""
    import os

    from .files import read_json

    if not os.path.exists(path):
        return {"schema": SCHEMA, "version": VERSION, "answers": {}}
    data = read_json(path, "answers file")
    if not (isinstance(data, dict) and data.get("schema") == SCHEMA and isinstance(data.get("answers"), dict)
            and all(isinstance(a, dict) and isinstance(a.get("answer", ""), str) for a in data["answers"].values())):
        raise UsageError(f"Not a kerasbench answers file: {path} (expected schema {SCHEMA!r} with an 'answers' "
                         "object of commands).")
    if data.get("version") != VERSION:
        raise UsageError(f"Not a usable kerasbench answers file: {path}: version {data.get('version')!r}, this "
                         f"kerasbench reads version {VERSION}.")
    return data


def _todo(asked: Sequence[Question], done: dict, path: str, limit: int) -> Tuple[List[Question], str]:
    """(the questions this call runs, its first line: how many answer, are answered, run now, each change's first)."""
    todo = [q for q in asked if q.command not in done]
    waiting = len(todo)
    if limit:
        todo = todo[:limit]
    later = f" ({waiting - len(todo)} left for another call: --answer-limit)" if waiting > len(todo) else ""
    first = sum(q.first for q in asked if q.command not in done)
    first = f"; the first {first} each answer a change with no answer yet" if first else ""
    return todo, (f"{len(asked)} command(s) answer the atlas's changes: {len(asked) - waiting} answered in {path}, "
                  f"{len(todo)} to run{later}{first}\n")


def plan(asked: Sequence[Question], path: str, out: TextIO, limit: int = 0) -> List[Question]:
    """What answer_all would run (--answer-plan), in its order, each with the changes it explains; none run."""
    todo, head = _todo(asked, read(path)["answers"], path, limit)
    out.write(head)
    for i, q in enumerate(todo, 1):
        mark = ", the first answer of a change" if q.first else ""
        out.write(f"[{i}/{len(todo)}] {q.what}: {q.command}\n    explains {len(q.changes)}{mark}: "
                  f"{'; '.join(q.changes)}\n")
    return todo


def answer_all(asked: Sequence[Question], path: str, out: TextIO, config: Optional[str] = None,
               extra: Sequence[str] = (), run: Optional[Callable[[List[str]], Tuple[int, str]]] = None,
               clock: Callable[[], float] = time.monotonic, limit: int = 0, minutes: float = 0) -> dict:
    """Run each question's command not yet answered in `path`, writing the file after each; the answers file.
    `extra`: options added to every command (e.g. --jobs 2); `limit`: at most this many commands this call;
    `minutes`: start no command once this many minutes have passed (one started before runs to its end)."""
    from .environment import NO_ROOM
    from .files import write_json

    run = run or _run
    data = read(path)
    done = data["answers"]
    todo, head = _todo(asked, done, path, limit)
    out.write(head)
    began = clock()
    for i, q in enumerate(todo, 1):
        spent = clock() - began
        if minutes and spent >= minutes * 60:
            out.write(f"the budget of {minutes:g} minute(s) is spent ({_clock(spent)}): {len(todo) - i + 1} of "
                      f"{len(todo)} left for another call (--answer-minutes)\n")
            break
        left = f", ~{_clock(spent / (i - 1) * (len(todo) - i + 1))} left" if i > 1 else ""
        out.write(f"[{i}/{len(todo)}] {q.what}: {q.command} ({i - 1} of {len(todo)} done, {_clock(spent)} elapsed"
                  f"{left})\n")
        out.flush()
        start = clock()
        code, output = run(_argv(q.command, config, extra))
        seconds = clock() - start
        found = answer_text(q.command, output)
        tail = [line for line in output.splitlines() if line.strip()][-TAIL:]
        if code and not found and any(NO_ROOM in line for line in tail):  # this disk, not the question: not kept
            out.write(f"    {tail[-1]}\n    {DISK_FULL}, {len(todo) - i + 1} of {len(todo)} left for another call "
                      "(this one not kept: it runs again once there is room)\n")
            break
        done[q.command] = {"what": q.what, "answer": found, "rc": code, "seconds": round(seconds, 1),
                           "finished": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                           "changes": list(q.changes), **({} if found and code == 0 else {"tail": tail})}
        data.update(kerasbench=__version__, config=config, extra=list(extra))
        write_json(path, data, "answers")
        out.write(f"    {found or 'no answer (exit ' + str(code) + '): ' + (tail[-1] if tail else 'no output')} "
                  f"({_clock(seconds)})\n")
    return data


def _clock(seconds: float) -> str:
    minutes, s = divmod(int(round(seconds)), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{s:02d}" if minutes >= 60 else f"{minutes}:{s:02d}"


def unconfirmed(entry: Optional[dict], flipped: bool = False) -> bool:
    """Whether an answer found its change's two ends alike on measuring them again (a triage or attribution that
    ran to its end and said so): the change the atlas marked is not confirmed. `flipped`: the mark is a flip of the
    verdict, which an attribution across backends that finds every backend alike (all grow, or none) contradicts
    too (it speaks of verdicts, not of a slope's size)."""
    from .attribute import BACKENDS_ALIKE
    from .triage import ENDS_ALIKE

    said = str((entry or {}).get("answer") or "")
    if not entry or entry.get("rc") != 0:
        return False
    # the answer's own stop, "No answer for kfold × clear_session (growth_per_iter): the ends do not differ (…)", not
    # the words inside a middle release's why ("2.13.0 behaves like neither end (… for certain: the ends do not differ
    # by more than their own uncertainty)": there the ends differed, and the bisection went on to 2.13.0)
    alike = said.startswith("No answer for ") and f"): {ENDS_ALIKE} (" in said
    # attribute prints its conclusion as "Answer: The growth follows Keras: …", and keeps that line
    return alike or (flipped and said.removeprefix("Answer: ").startswith(BACKENDS_ALIKE))


def shown(entry: Optional[dict]) -> Optional[str]:
    """An answer as the atlas shows it beside its command: the answer and its wall, or why there is none."""
    if not entry:
        return None
    took = f"{_clock(float(entry.get('seconds') or 0))} to answer"
    if entry.get("answer") and entry.get("rc") == 0:
        return f"{entry['answer']} ({took})"
    tail = entry.get("tail") or []
    return f"no answer (exit {entry.get('rc')}, {took}): {tail[-1] if tail else 'no output'}"
