"""Which package carries a change: the bad environment's packages moved into the good one, one at a time.

`kerasbench attribute --good A --bad B` (and `triage --attribute`, on the bracket triage found) takes the
pins of two environments (a TF release's asv environment, or an existing asv environment by name), and for
each package whose pin differs, the good environment with that one package at the bad side's version. Each
environment is made as asvconf.python_for makes any (uv, one resolve); where the installer cannot resolve
it (TF 2.13.1 requires keras < 2.14), the pins the others' requirements exclude are installed with
--no-deps after the rest (the moved package keeps its own dependencies: tensorboard and the estimator move
with tensorflow-cpu), the environment must import tensorflow and build a Keras layer, and the row is marked
forced with the installer's reason. Every environment is measured in fresh workers (runner.measure_at_once)
and classified against the two ends as triage classifies a release (triage.classify): a package whose row
behaves like the bad end carries the change.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import time
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, TextIO, Tuple

from .console import text_table
from .errors import UsageError
from .record import Record
from .units import MIN_MEMORY_CAP

if TYPE_CHECKING:
    from .runner import RunSpec

INSTALLER_ONLY = ("pip+asv_runner",)  # asv's runner: in every environment, never what is measured


@dataclasses.dataclass
class Row:
    """One environment of the attribution: its pins, what it moved from the bad side, how it installed, its class."""

    label: str
    pins: Dict[str, str]
    moved: Tuple[str, ...] = ()
    python: str = ""
    env_name: str = ""
    forced: List[str] = dataclasses.field(default_factory=list)
    why: str = ""
    record: Optional[Record] = None
    cls: str = ""
    reason: str = ""


def _canonical(name: str) -> str:
    """A package name as the registry compares it (tf_keras and tf-keras are one package)."""
    return name.replace("_", "-").replace(".", "-").lower()


def differing(good: Dict[str, str], bad: Dict[str, str]) -> List[str]:
    """The packages (the bad side's names, in its order) pinned differently in `bad` than in `good`, or only there."""
    have = {_canonical(k): v for k, v in good.items()}
    return [name for name, version in bad.items()
            if name not in INSTALLER_ONLY and have.get(_canonical(name)) != version]


def swapped(good: Dict[str, str], bad: Dict[str, str], names: Sequence[str]) -> Dict[str, str]:
    """`good` with `names` at their `bad` versions (a name only `good` pins keeps its place)."""
    out = dict(good)
    where = {_canonical(k): k for k in good}
    for name in names:
        out[where.get(_canonical(name), name)] = bad[name]
    return out


def plan(good: Dict[str, str], bad: Dict[str, str]) -> List[Row]:
    """The environments to measure: the good end, the bad end, and the good one with each differing package moved."""
    names = differing(good, bad)
    if not names:
        raise UsageError("Nothing to attribute: the good and the bad environment pin the same packages.")
    rows = [Row("good", dict(good)), Row("bad", dict(bad), tuple(names))]
    rows += [Row(f"good + {name} {bad[name]}", swapped(good, bad, [name]), (name,)) for name in names]
    return rows


def side_pins(config: str, side: str, python: Optional[str] = None) -> Dict[str, str]:
    """The pins of --good/--bad `side`: a TF release (its asv environment's pins), or an asv environment's name or
    folder (its asv-env-info.json)."""
    import json

    from . import asvconf, releases

    folder = side if os.path.isdir(side) else os.path.join(
        os.path.dirname(os.path.abspath(config)), asvconf.read_config(config).get("env_dir", "env"), side)
    info = os.path.join(folder, "asv-env-info.json")
    if os.path.isfile(info):
        try:
            with open(info) as f:
                return dict(json.load(f)["requirements"])
        except (OSError, ValueError, KeyError, TypeError):
            raise UsageError(f"Cannot read the pins of environment {side}: {info} has no 'requirements'.") from None
    if all(part.isdigit() for part in side.split(".")) and side.count(".") >= 1:
        return releases.requirements_for(side, asvconf.includes(config), python=python)
    raise UsageError(f"Unknown environment. Received: {side!r}. Expected a TF release (e.g. 2.13.1) or an asv "
                     f"environment of {config} (`kerasbench envs`) or its folder.")


def reproduce_args(config: str, pins: Dict[str, str], python: Optional[str] = None) -> List[str]:
    """`--tf VERSION [--pin NAME==VERSION ...]`: the `kerasbench run` options that make the environment of `pins`."""
    from . import asvconf, releases

    entries = asvconf.includes(config)
    package = releases.tf_package(entries)
    tf = pins.get(package)
    if tf is None:
        return [f"--pin={name}=={version}" for name, version in pins.items() if name not in INSTALLER_ONLY]
    try:
        default = releases.requirements_for(tf, entries, python=python)
    except UsageError:
        default = {}
    args = ["--tf", tf]
    for name, version in pins.items():
        if name != package and name not in INSTALLER_ONLY and default.get(name) != version:
            args.append(f"--pin={name}=={version}")
    return args


def _describe(row: Row, good: Dict[str, str]) -> str:
    """What a row's environment pins unlike the good one ('=' for the good one itself)."""
    moved = [f"{name} {row.pins[name]}" for name in row.pins
             if name not in INSTALLER_ONLY and good.get(name) != row.pins[name]]
    return ", ".join(moved) or "(the good pins)"


def answer(rows: Sequence[Row], differ: bool, why: str, what: str) -> str:
    """The one-paragraph answer: which packages carry the change, or why there is none."""
    if not differ:
        return f"No answer for {what}: the ends do not differ ({why})."
    singles = rows[2:]
    carriers = [r for r in singles if r.cls == "bad"]
    unclear = [r for r in singles if r.cls == "unclear"]
    goods = [r for r in singles if r.cls == "good"]

    def names(some):
        return ", ".join(f"{r.moved[0]} {r.pins[r.moved[0]]}" for r in some)

    if carriers:
        forced = [r for r in carriers if r.forced]
        head = f"Answer: {names(carriers)} carr{'ies' if len(carriers) == 1 else 'y'} the change of {what}: " \
               f"the good environment with {'it' if len(carriers) == 1 else 'each'} behaves like the bad end"
        if goods:
            head += f"; with {names(goods)} it behaves like the good end"
        if unclear:
            head += f"; with {names(unclear)} like neither"
        if forced:
            head += f" ({names(forced)}: a forced install, see the install column)"
        return head + "."
    text = f"No single package carries the change of {what}"
    if goods:
        text += f": with {names(goods)} moved alone the good environment still behaves like the good end"
    if unclear:
        text += f"; with {names(unclear)} like neither end"
    return text + " (the change needs several of them together, or a package the pins do not name)."


def render(rows: Sequence[Row], good: Dict[str, str], metric: str, head: str, commands: Sequence[str],
           seconds: float) -> str:
    """The answer, the evidence table (environment, pins moved, install, slope and CI, verdict, peak, class)."""
    from .triage import _evidence

    table = []
    for row in rows:
        install = "resolved" if not row.forced else f"forced: {', '.join(row.forced)} --no-deps"
        if row.record is None:
            table.append([row.label, _describe(row, good), install, "not measured", "", "", row.cls or "", ""])
            continue
        keras, growth, verdict, peak, note = _evidence(row.record, metric)
        table.append([row.label, _describe(row, good), install, growth, verdict, peak, row.cls, note])
    lines = [head, "", *text_table(["environment", "pins unlike good", "install", "KiB/iter [95% CI]", "verdict",
                                    "peak MiB", "class", "note"], table)]
    whys = [(row.label, row.why) for row in rows if row.forced and row.why]
    if whys:
        lines += ["", "Forced installs (the installer's reason; the rest resolved, these with --no-deps, then "
                  "tensorflow and Keras imported):"]
        lines += [f"  {label}: {why}" for label, why in whys]
    lines += ["", f"{len(rows)} environments measured, {seconds / 60:.1f} min.", "Reproduce:",
              *(f"  {c}" for c in commands)]
    return "\n".join(lines) + "\n"


def attribute(config: str, good: Dict[str, str], bad: Dict[str, str], template: RunSpec, metric: str,
              reproduce: List[str], err: TextIO, python: Optional[str] = None, jobs: int = 2,
              known: Optional[Dict[str, Record]] = None) -> Tuple[str, List[Row]]:
    """`kerasbench attribute`: measure the good end, the bad end and each one-package swap; (the answer, the rows).

    `template` is the validated RunSpec of the pair; `reproduce` the `kerasbench run` command line each row's
    environment options are appended to. `known` ({'good': record, 'bad': record}) are ends measured already
    (triage's bracket): not measured again. Progress goes to `err`.
    """
    from . import asvconf, runner, triage
    from .console import Progress, status_line

    started = time.monotonic()
    rows = plan(good, bad)
    known = known or {}
    what = f"{template.loop} × {template.strategy} ({metric})"
    status_line(err, f"attribute: {len(rows) - 2} package(s) differ: "
                     f"{', '.join(f'{n} {good.get(n, chr(8212))} → {bad[n]}' for n in rows[1].moved)}", final=True)
    for row in rows:
        if row.label in known:
            row.record = known[row.label]
            continue

        def note(text, label=row.label):
            status_line(err, f"attribute: {label}: {text}", final=True)

        try:
            row.python, row.env_name = asvconf.python_for(config, row.pins, note, python)
        except UsageError as e:
            if row.label in ("good", "bad"):
                raise
            row.cls, row.reason = "unclear", f"not installable: {e}"
            note(row.reason)
            continue
        installed = asvconf.install_note(row.python)
        row.forced, row.why = list(installed.get("forced") or []), installed.get("why") or ""
    todo = [row for row in rows if row.record is None and row.python]
    at_once = 1 if metric == "seconds_per_iter" else max(1, min(jobs, len(todo)))
    specs = []
    for row in todo:
        spec = dataclasses.replace(template, python=row.python, jobs=at_once)
        if at_once > 1 and not os.environ.get("KERASBENCH_MEMORY_CAP"):
            spec = dataclasses.replace(spec, memory_cap=max(MIN_MEMORY_CAP, runner.default_memory_cap() // at_once))
        specs.append(spec)
    progress = triage._Labelled(Progress(err, len(todo), template.warmup), [row.label for row in todo])
    measured = runner.measure_at_once(specs, at_once, progress, None)
    # in the order given; when an interrupt left some out, each record's spec names its interpreter
    by_python = {r["spec"].get("python"): r for r in measured} if len(measured) < len(specs) else \
        {spec.python: r for spec, r in zip(specs, measured)}
    for row, spec in zip(todo, specs):
        row.record = by_python.get(spec.python)
        if row.record is not None:
            row.record["asv_env"] = row.env_name
    ends = rows[0].record, rows[1].record
    if ends[0] is None or ends[1] is None:
        raise UsageError("attribute: an end was not measured (interrupted)")
    differ, why = triage.ends_differ(metric, *ends) if all(e["status"] == "ok" for e in ends) else \
        (False, "an end did not measure: " + "; ".join(f"{e['status']}: {e['reason']}" for e in ends
                                                         if e["status"] != "ok"))
    status_line(err, f"attribute: bad vs good: {why}", final=True)
    rows[0].cls, rows[1].cls = ("good", "bad") if differ else ("unclear", "unclear")
    for row in rows[2:]:
        if row.record is None:
            row.cls = row.cls or "unclear"
            continue
        row.cls, row.reason = triage.classify(metric, *ends, row.record) if row.record["status"] == "ok" \
            else ("unclear", f"{row.record['status']}: {row.record['reason']}")
        row.record["triage"] = {"class": row.cls, "why": row.reason}
        status_line(err, f"attribute: {row.label} behaves {row.cls}: {row.reason}", final=True)
    commands = [shlex.join(reproduce + reproduce_args(config, row.pins, python)) for row in rows]
    head = answer(rows, differ, why, what)
    return render(rows, good, metric, head, commands, time.monotonic() - started), rows


def summary(rows: Sequence[Row], metric: str) -> dict:
    """The attribution as JSON-ready data (beside the records in a --json file)."""
    return {"metric": metric, "rows": [{"label": r.label, "pins": r.pins, "moved": list(r.moved), "forced": r.forced,
                                        "why": r.why, "class": r.cls, "env": r.env_name} for r in rows]}
