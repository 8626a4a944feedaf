"""What the atlas asks of a change and what an answer says, as data (pure: no process run, no file read).

A `Question` is one command of a change's list: typed fields (the command, its releases, loop or shipped report,
strategy, Python, Keras, backend, profile), every name checked against the registries before it is planned
(`problem`: names come from data files), its argv rendered once from those fields, never split from a string.
An answer is the object a command's `--json` holds under "answer" (`result`: its words and what it found, the ends
alike, the ends' verdict, the first bad and last good versions, every backend alike); kerasbench.answers runs the
questions and keeps the answers, the atlas reads them here (`answered`, `unconfirmed`, `ends_verdict`, `shown`).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

FILE = "answers.json"  # in the atlas's folder, beside atlas.json: `kerasbench atlas` shows what it holds
RESULT_SCHEMA = "kerasbench-answer"  # the object a command's --json holds under "answer"
RESULT_VERSION = 1
VERBS = ("triage", "attribute", "ablate")
REPRO_PLACEHOLDER = "FILE"  # a repro of the user's: the page names no machine's path, --answer cannot run it
REPORTS_FOLDER = "kerasbench/examples/reports"  # a public report's repro file: FOLDER/<name>.py (public.Report)
_RELEASE = re.compile(r"\d+\.\d+(\.\d+)?")  # a value's shape, checked before it becomes an option (not prose)
_NIGHTLY = re.compile(r"nightly:\d{4}-\d{2}-\d{2}")
_PYTHON = re.compile(r"3\.\d+")


@dataclass(frozen=True)
class Question:
    """One question of the atlas's lists: a command and its options as fields, what it asks, and the changes
    (loop × strategy, TF p → v) it explains. `argv()` renders it, `command` is how the page shows it (its key in
    answers.json)."""

    verb: str  # triage | attribute | ablate
    what: str = ""
    good: str = ""
    bad: str = ""
    tf: str = ""  # ablate's release, attribute --backends'
    loop: str = ""  # a built-in loop, or
    report: str = ""  # a shipped public report's row (its repro file), or
    placeholder: bool = False  # a repro of the user's (shown with FILE, never run)
    strategy: str = ""
    python: str = ""
    keras: str = ""  # tf_keras (ablate)
    backend: str = ""  # ablate --backend
    backends: Tuple[str, ...] = ()  # attribute --backends
    profile: str = ""
    changes: Tuple[str, ...] = dataclasses.field(default=(), compare=False)
    first: bool = dataclasses.field(default=False, compare=False)  # answers a change with no answer yet

    def problem(self) -> Optional[str]:
        """Why this question cannot be asked (a name no registry knows, a value of the wrong shape); None when it
        can. Names come from data files: each is checked before it becomes an option."""
        from ._compat import BACKENDS
        from .loops import LOOPS
        from .profiles import PROFILES
        from .examples.reports import NAMES
        from .strategies import STRATEGIES

        checks = [
            (self.verb in VERBS, "command", self.verb),
            (sum(map(bool, (self.loop, self.report, self.placeholder))) == 1, "loop", self.loop or self.report),
            (not self.loop or (self.loop in LOOPS and self.loop != "repro"), "loop", self.loop),
            (not self.report or self.report in NAMES, "report", self.report),
            (not self.strategy or self.strategy in STRATEGIES, "strategy", self.strategy),
            (not self.python or bool(_PYTHON.fullmatch(self.python)), "python", self.python),
            (self.keras in ("", "tf_keras"), "keras", self.keras),
            (not self.backend or self.backend in BACKENDS, "backend", self.backend),
            (all(b in BACKENDS for b in self.backends), "backends", ",".join(self.backends)),
            (not self.profile or self.profile in PROFILES, "profile", self.profile),
        ] + [(not v or bool(_RELEASE.fullmatch(v) or _NIGHTLY.fullmatch(v)), "release", v)
             for v in (self.good, self.bad, self.tf)]
        bad = next(((what, value) for ok, what, value in checks if not ok), None)
        return None if bad is None else f"{bad[0]} {bad[1]!r} is not one this kerasbench knows"

    def where(self) -> List[str]:
        if self.loop:
            return ["--loop", self.loop]
        return ["--repro", f"{REPORTS_FOLDER}/{self.report}.py" if self.report else REPRO_PLACEHOLDER]

    def argv(self) -> List[str]:
        """The command's arguments after `kerasbench`, in the order the page has always shown them."""
        strategy = ["--strategy", self.strategy] if self.strategy else []
        python = ["--python", self.python] if self.python else []
        if self.verb == "ablate":
            return (["ablate", *self.where(), "--tf", self.tf] + (["--keras", self.keras] if self.keras else [])
                    + (["--backend", self.backend] if self.backend else []) + python)
        if self.backends:
            return ["attribute", "--backends", ",".join(self.backends), "--tf", self.tf, *self.where(), *strategy]
        return ([self.verb, "--good", self.good, "--bad", self.bad, *self.where(), *strategy, *python]
                + (["--profile", self.profile] if self.profile else []))

    @property
    def command(self) -> str:
        """The question as the page shows it: `kerasbench triage --good 2.13.1 …`."""
        return shlex.join(["kerasbench", *self.argv()])

    def data(self) -> Dict[str, Any]:
        """The fields an answers file keeps (what is not at its default left out)."""
        keep = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name not in ("what", "changes", "first") and getattr(self, f.name) != f.default}
        return {**keep, **({"backends": list(self.backends)} if self.backends else {})}

    @classmethod
    def from_data(cls, fields: Any) -> Optional["Question"]:
        """The question an answers file keeps; None for one that is not a question this kerasbench can ask."""
        names = {f.name for f in dataclasses.fields(cls)} - {"what", "changes", "first"}
        if not isinstance(fields, dict) or set(fields) - names or not isinstance(fields.get("verb"), str):
            return None
        typed = {k: tuple(v) if k == "backends" and isinstance(v, list) else v for k, v in fields.items()}
        if not all(isinstance(v, bool) if k == "placeholder" else isinstance(v, tuple) if k == "backends"
                   else isinstance(v, str) for k, v in typed.items()):
            return None
        question = cls(**typed)
        return None if question.problem() else question


def result(text: str, **found: Any) -> Dict[str, Any]:
    """A command's answer as --json keeps it (under "answer"): its words and what it found (`alike`: the two ends
    measured again do not differ; `ends`: compare's verdict of the bad end against the good one; `first_bad`,
    `last_good`; `backends_alike`: every backend reads alike)."""
    from .protocol import PROTOCOL_VERSION

    return {"schema": RESULT_SCHEMA, "version": RESULT_VERSION, "protocol": PROTOCOL_VERSION, "text": text,
            **found}


def _is_result(value: Any) -> bool:
    return (isinstance(value, dict) and value.get("schema") == RESULT_SCHEMA and value.get("version") == RESULT_VERSION
            and isinstance(value.get("text"), str))


def answered(entry: Optional[dict]) -> bool:
    """Whether an answers file's entry is an answer (the command's answer object, exit 0), not a failure to retry."""
    return bool(entry) and entry.get("rc") == 0 and _is_result(entry.get("result"))


def unconfirmed(entry: Optional[dict], flipped: bool = False) -> bool:
    """Whether an answer found its change's two ends alike on measuring them again (a triage or attribution that
    ran to its end and said so): the change the atlas marked is not confirmed. `flipped`: the mark is a flip of the
    verdict, which an attribution across backends that finds every backend alike (all grow, or none) contradicts
    too (it speaks of verdicts, not of a slope's size)."""
    if not answered(entry):
        return False
    found = entry["result"]
    return bool(found.get("alike")) or (flipped and bool(found.get("backends_alike")))


def ends_verdict(entry: Optional[dict]) -> Optional[str]:
    """compare's verdict of a triage's bad end against its good one ('regressed', 'improved', …), where its answer
    says it."""
    return entry["result"].get("ends") if answered(entry) else None


def question_of(entry: Optional[dict]) -> Optional[Question]:
    return Question.from_data((entry or {}).get("question"))


def shown(entry: Optional[dict]) -> Optional[str]:
    """An answer as the atlas shows it beside its command: the answer and its wall, or why there is none."""
    if not entry:
        return None
    took = f"{_clock(float(entry.get('seconds') or 0))} to answer"
    if answered(entry) and entry["result"]["text"]:
        return f"{entry['result']['text']} ({took})"
    tail = entry.get("tail") or []
    return f"no answer (exit {entry.get('rc')}, {took}): {tail[-1] if tail else 'no output'}"


def _clock(seconds: float) -> str:
    minutes, s = divmod(int(round(seconds)), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{s:02d}" if minutes >= 60 else f"{minutes}:{s:02d}"
