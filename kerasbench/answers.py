"""Each change of the atlas answered: the triage, attribution and ablation its list names, run and kept as data.

The atlas marks a change between consecutive columns (▲ worse, ▼ better; a flip with a side undecided, ◆, is not a
change) and lists, per change, the questions that explain it (atlas.commands: which release, which package, which
cleanup steps), each a `Question`: typed fields (the command, its releases, loop or shipped report, strategy,
Python, Keras, backend, profile), every name checked against the registries before it is planned, its argv
rendered once from those fields (never split from a string). `kerasbench atlas RECORDS --answer --config
asv.matrix.json` runs them (atlas.questions): each question once, in a process of its own with `--json` to a file
of its own, one answer for each change first, then the most telling (atlas.first_answers). The command's answer is
the versioned object its --json holds under "answer" (`RESULT_SCHEMA`: its text and what it found: the ends alike,
the ends' verdict, the first bad and last good versions); nothing is read back from its printed text.

Only an answer is an answer: a command that exits non-zero, is killed, or writes no answer object is kept as a
failure (its exit status and last lines, shown on the page) and asked again by the next call. The file is written
after each command, so an interrupt keeps what finished, and a second call goes on where the first stopped.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import time
from typing import Any, Callable, List, Optional, Sequence, TextIO, Tuple

from . import __version__
from .errors import UsageError
from .questions import (FILE, REPORTS_FOLDER, REPRO_PLACEHOLDER, RESULT_SCHEMA, Question, _clock, _is_result, answered,
                        ends_verdict, question_of, result, shown, unconfirmed)
from .units import MIB

__all__ = ["FILE", "REPORTS_FOLDER", "REPRO_PLACEHOLDER", "RESULT_SCHEMA", "Question", "answer_all", "answered",
           "check_config", "ends_verdict", "plan", "question_of", "read", "result", "shown", "unconfirmed"]

SCHEMA = "kerasbench-answers"
VERSION = 2  # 2: each answer its question's fields and the command's own answer object (1: prose, see tools/)
TAIL = 3  # lines of a command's output kept when it gave no answer: why it could not
DISK_FULL = "stopped: the disk is full"  # then "N of M left for another call": .ci/answers makes room on it
# What an answers file may grow to: read whole (the page shows every answer), ~0.7 KiB an answer, so ~20,000 answers;
# past WARN_SHARE of it each write says so, before the limit refuses the file.
LIMIT = 16 * MIB
WARN_SHARE = 0.8


def _argv(question: Question, config: Optional[str], extra: Sequence[str], json_path: str) -> List[str]:
    return [sys.executable, "-m", "kerasbench", *question.argv(), *(["--config", config] if config else []),
            *extra, "--json", json_path]


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


def _answer_in(path: str) -> Optional[dict]:
    """The answer object a command's --json file holds; None when it wrote none (or not one)."""
    from .files import DATA_LIMIT, read_json

    if not os.path.exists(path):
        return None
    try:
        payload = read_json(path, "answer file", limit=DATA_LIMIT)
    except UsageError:
        return None
    found = payload.get("answer") if isinstance(payload, dict) else None
    return found if _is_result(found) else None


def _entry_problem(entry: Any) -> Optional[str]:
    if not isinstance(entry, dict) or Question.from_data(entry.get("question")) is None:
        return "an answer without a question this kerasbench can ask"
    if "result" in entry and not _is_result(entry["result"]):
        return "an answer object of another kind"
    for key, kinds in (("rc", (int,)), ("seconds", (int, float)), ("tail", (list,)), ("changes", (list,)),
                       ("what", (str,)), ("finished", (str,))):
        if key in entry and (not isinstance(entry[key], kinds) or isinstance(entry[key], bool)):
            return f"{key} {entry[key]!r} of the wrong type"
    if not all(isinstance(x, str) for x in entry.get("tail", []) + entry.get("changes", [])):
        return "tail or changes not text"
    return None


def read(path: str) -> dict:
    """An answers file (or an empty one when `path` does not exist); a one-line UsageError if it is not one."""
    from .files import read_json

    if not os.path.exists(path):
        return {"schema": SCHEMA, "version": VERSION, "answers": {}}
    data = read_json(path, "answers file", limit=LIMIT)
    if not (isinstance(data, dict) and data.get("schema") == SCHEMA and isinstance(data.get("answers"), dict)):
        raise UsageError(f"Not a kerasbench answers file: {path} (expected schema {SCHEMA!r} with an 'answers' "
                         "object of commands).")
    if data.get("version") != VERSION:
        hint = " (version 1 kept answers as printed text: python tools/answers_v1_to_v2.py converts it)" \
            if data.get("version") == 1 else ""
        raise UsageError(f"Not a usable kerasbench answers file: {path}: version {data.get('version')!r}, this "
                         f"kerasbench reads version {VERSION}{hint}.")
    for command, entry in data["answers"].items():
        problem = _entry_problem(entry)
        if problem is None and Question.from_data(entry["question"]).command != command:
            problem = "its question is not the command it is kept under"
        if problem:
            shown = command if len(command) <= 80 else command[:77] + "..."
            raise UsageError(f"Not a kerasbench answers file: {path}: {shown!r}: {problem}.")
    return data


def _todo(asked: Sequence[Question], done: dict, path: str, limit: int) -> Tuple[List[Question], str]:
    """(the questions this call runs, its first line: how many answer, are answered, run now, each change's first)."""
    todo = [q for q in asked if not answered(done.get(q.command))]
    waiting = len(todo)
    retry = sum(q.command in done for q in todo)
    if limit:
        todo = todo[:limit]
    later = f" ({waiting - len(todo)} left for another call: --answer-limit)" if waiting > len(todo) else ""
    first = sum(q.first for q in asked if not answered(done.get(q.command)))
    first = f"; the first {first} each answer a change with no answer yet" if first else ""
    again = f", {retry} of them failed before and asked again" if retry else ""
    return todo, (f"{len(asked)} command(s) answer the atlas's changes: {len(asked) - waiting} answered in {path}, "
                  f"{len(todo)} to run{again}{later}{first}\n")


def plan(asked: Sequence[Question], path: str, out: TextIO, limit: int = 0) -> List[Question]:
    """What answer_all would run (--answer-plan), in its order, each with the changes it explains; none run."""
    todo, head = _todo(asked, read(path)["answers"], path, limit)
    out.write(head)
    for i, q in enumerate(todo, 1):
        mark = ", the first answer of a change" if q.first else ""
        out.write(f"[{i}/{len(todo)}] {q.what}: {q.command}\n    explains {len(q.changes)}{mark}: "
                  f"{'; '.join(q.changes)}\n")
    return todo


def check_config(config: Optional[str]) -> Optional[str]:
    """The asv config the commands measure in, checked once before the first: a one-line UsageError for one that is
    not there or not a config (each command would fail alike)."""
    if config is None:
        return None
    from .asvconf import find_config, includes

    found = find_config(config)
    includes(found)  # read and checked as a measuring command reads it: its one-line error here, once
    return found


def answer_all(asked: Sequence[Question], path: str, out: TextIO, config: Optional[str] = None,
               extra: Sequence[str] = (), run: Optional[Callable[[List[str]], Tuple[int, str]]] = None,
               clock: Callable[[], float] = time.monotonic, limit: int = 0, minutes: float = 0) -> dict:
    """Run each question not yet answered in `path` (a failure is asked again), writing the file after each; the
    answers file. `extra`: options added to every command (e.g. --jobs 2); `limit`: at most this many commands this
    call; `minutes`: start no command once this many minutes have passed (one started before runs to its end)."""
    import tempfile

    from .install import NO_ROOM
    from .files import private_temp_dir, write_json

    config = check_config(config)
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
        with tempfile.TemporaryDirectory(dir=private_temp_dir()) as folder:
            json_path = os.path.join(folder, "answer.json")
            code, output = run(_argv(q, config, extra, json_path))
            found = _answer_in(json_path) if code == 0 else None
        seconds = clock() - start
        tail = [line for line in output.splitlines() if line.strip()][-TAIL:]
        if code and any(NO_ROOM in line for line in tail):  # this disk, not the question: not kept
            out.write(f"    {tail[-1]}\n    {DISK_FULL}, {len(todo) - i + 1} of {len(todo)} left for another call "
                      "(this one not kept: it runs again once there is room)\n")
            break
        entry = {"question": q.data(), "what": q.what, "rc": code, "seconds": round(seconds, 1),
                 "finished": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "changes": list(q.changes)}
        if found is not None:
            entry["result"] = found
        else:
            entry["tail"] = tail if code else tail + ["(exit 0 and no answer object in its --json)"]
        done[q.command] = entry
        data.update(kerasbench=__version__, config=config, extra=list(extra))
        write_json(path, data, "answers")
        size = os.path.getsize(path)
        if size > WARN_SHARE * LIMIT:
            out.write(f"    {path} is {size / MIB:.1f} MiB of the {LIMIT / MIB:.0f} MiB an answers file may "
                      "hold: answers of changes no longer on the map can go (the page counts them)\n")
        said = found["text"] if found else f"no answer (exit {code}, asked again next call): " + \
            (entry["tail"][-1] if entry["tail"] else "no output")
        out.write(f"    {said} ({_clock(seconds)})\n")
    return data


