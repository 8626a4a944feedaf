"""Answers as the atlas keeps them (answers.json, version 2), for the tests: entries made from a command line and
an answer's words, and fake commands that write their answer object to their --json as the real ones do."""

import json
import pathlib
import sys

from kerasbench import answers

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tools"))
import answers_v1_to_v2 as v1  # noqa: E402  (the one converter of command lines and printed answers)


def question(command, what=""):
    q = v1.question(command, what)
    assert q is not None, f"not a question this kerasbench can ask: {command}"
    return q


def entry(command, said="", rc=0, seconds=0, tail=(), **found):
    """An answers file's entry for `command`: its answer object (what it found: from `found`, else read from the
    words as version 1's answers were converted) where it answered; else a failure with `tail`."""
    q = question(command)
    kept = {"question": q.data(), "what": q.what, "rc": rc, "seconds": seconds, "finished": "2026-12-07T00:00:00Z",
            "changes": []}
    if said and rc == 0:
        kept["result"] = answers.result(said, **{**v1.found(said), **found})
    else:
        kept["tail"] = list(tail)
    return kept


def fake(said="", rc=0, output="", ran=None, **found):
    """A command as answers.answer_all runs it: writes its answer object to its --json (when it answers: exit 0 and
    words) and returns (rc, output)."""
    def run(argv):
        if ran is not None:
            ran.append(argv)
        if said and rc == 0:
            path = argv[argv.index("--json") + 1]
            pathlib.Path(path).write_text(json.dumps({"answer": answers.result(said, **found)}))
        return rc, output or said
    return run


def kept(v1_answers):
    """{command: entry} of version 1's shape ({"rc", "answer", "seconds", "tail"}) as version 2 keeps them (entries of
    version 2 as they are); None and {} as they are."""
    if not v1_answers:
        return v1_answers
    return {cmd: e if "question" in e else entry(cmd, e.get("answer", ""), e.get("rc", 0), e.get("seconds", 0),
                                                   e.get("tail", ()))
            for cmd, e in v1_answers.items()}
