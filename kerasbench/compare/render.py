"""A comparison as text: a table, markdown, JSON or CSV, with the lines that say what each version ran on and how
far its verdicts hold; --fail-on's gate and the count of each verdict.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import machine as machines, rule
from ..console import markdown_table, text_table
from ..metrics import METRICS
from ..record import SCHEMA_VERSION, backend_of, framework_text
from ..rule import DEFAULT_FLOOR
from ..units import KIB
from ..versions import version_key
from .cells import FIELDS, VERDICTS, Cell, Groups
from .judging import status_of

FORMATS = ("table", "markdown", "json", "csv")
COLUMNS = ("loop", "strategy", "metric", "baseline", "value", "ratio", "verdict", "why")


def difference_text(metric: str, diff: float) -> str:
    """A signed difference of `metric` as people read it (the ratio column where a ratio would mislead)."""
    how = METRICS[metric].compare
    if getattr(how, "difference", None):  # a rule that says how its differences read (Magnitude's)
        return how.difference(diff)
    text = METRICS[metric].show(diff)
    return text if text.startswith(("+", "-")) else f"{'+' if diff >= 0 else ''}{text}"


def _value_text(c, which):
    value = c["baseline_value" if which == "baseline" else "value"]
    text = f"{c[which]}: " + ("n/a" if value is None else METRICS[c["metric"]].show(value))
    beside = c["baseline_beside_value" if which == "baseline" else "beside_value"]
    if c.get("beside") and beside is not None:
        text += f" ({c['beside'].replace('_', ' ')} {METRICS[c['beside']].show(beside)})"
    return text


def _rows(cells):
    rows = []
    for c in cells:
        if c["ratio"] is not None:
            shown = f"{c['ratio']:.2f}x"
        elif c["difference"] is not None and c["baseline_value"]:
            shown = f"Δ {difference_text(c['metric'], c['difference'])}"  # a ratio across signs would mislead
        else:
            shown = "n/a"
        rows.append([c["loop"], c["strategy"], c["metric"], _value_text(c, "baseline"), _value_text(c, "version"),
                     shown, c["verdict"], c["why"]])
    return rows


GATES = ("regressed", "improved", "inconclusive", "not comparable", "n/a")  # what --fail-on may name


def fail_on(text: str) -> Tuple[str, ...]:
    """The verdicts of `--fail-on regressed,inconclusive`; UsageError naming the valid ones otherwise."""
    from ..selection import gates

    return gates(text, GATES)


def gate(cells: Sequence[Cell], verdicts: Sequence[str]) -> List[str]:
    """One line per cell whose verdict is one of `verdicts`: what a CI job prints before it fails."""
    return [f"{c['loop']} × {c['strategy']} {c['metric']}: {c['verdict']} on TF {c['version']} vs {c['baseline']}"
            f" ({c['why']})" for c in cells if c["verdict"] in verdicts]


def counts(cells: Sequence[Cell]) -> str:
    """'2 regressed, 5 unchanged': how many cells got each verdict."""
    found = {v: sum(c["verdict"] == v for c in cells) for v in VERDICTS}
    return ", ".join(f"{n} {v}" for v, n in found.items() if n)


def render_table(cells: Sequence[Cell], context: str, width: Optional[int] = None) -> str:
    """The table, its `why` column wrapped to fit `width` characters (None: one line a cell)."""
    return "\n".join(text_table(COLUMNS, _rows(cells), width) + ["", context, counts(cells)]) + "\n"


def render_markdown(cells: Sequence[Cell], context: str) -> str:
    lines = markdown_table(COLUMNS, _rows(cells))
    return "\n".join([f"**kerasbench compare**: {counts(cells)}", "", context, ""] + lines) + "\n"


def render_json(cells: Sequence[Cell], context: str, meta: Dict[str, Any]) -> str:
    payload = {"schema": SCHEMA_VERSION, **meta, "context": context, "cells": cells}
    return json.dumps(payload, indent=1, allow_nan=False) + "\n"


def render_csv(cells: Sequence[Cell]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(cells)
    return buf.getvalue()


def describe(groups: Groups) -> str:
    """One line per version: what it ran on (TF, Keras, Python, numpy, profile/iterations/repeats)."""
    lines = []
    for version in sorted(groups, key=version_key):
        recs = [r for r, _ in groups[version].values()]
        env = next((r["environment"] for r in recs if r.get("environment")), {}) or {}
        iters = sorted({r["spec"]["iterations"] for r in recs if r.get("spec")})
        reps = sorted({r["spec"]["repeats"] for r in recs if r.get("spec")})
        ran = (f"{version}: {framework_text(env)}" if backend_of(env) != "tensorflow" else
               f"TF {version}: Keras {env.get('keras')}")
        lines.append(f"{ran}, Python {env.get('python')}, numpy {env.get('numpy')}, "
                     f"{len(recs)} pairs, {'/'.join(map(str, iters))} iterations, {'/'.join(map(str, reps))} repeat(s)"
                     + build_text(env))
    builds = {_build(r.get("environment") or {}) for g in groups.values() for r, _ in g.values()} - {None}
    if len(builds) > 1:
        lines.append(f"note: the sides ran different TF builds ({' and '.join(sorted(builds))}): CPU figures of the "
                     "full build and the CPU build may differ by the build alone (measure the release in the "
                     "nightly's build to compare like with like: triage does)")
    ran_on: Dict[str, List[str]] = {}
    for version in sorted(groups, key=version_key):
        for record, _ in groups[version].values():
            if not record.get("environment"):  # e.g. a skipped pair: it ran nowhere
                continue
            names = ran_on.setdefault(machines.label(record.get("environment")), [])
            if version not in names:
                names.append(version)
    if len(ran_on) > 1:
        envs = {machines.label(r.get("environment")): r.get("environment")
                for g in groups.values() for r, _ in g.values() if r.get("environment")}
        first = next(iter(envs.values()), None)
        differ = [n for n, e in envs.items() if machines.difference(first, e)]
        lines.append("machines: " + "; ".join(f"{n} (TF {', '.join(v)})" for n, v in ran_on.items()) + ": " +
                     ("different hardware (cells between them say so)" if differ else "the same hardware fingerprint"))
    note = weak_note(groups)
    if note:
        lines.append(note)
    return "\n".join(lines)


def weak_note(groups: Groups) -> Optional[str]:
    """The note on how far the verdicts hold, true for the protocol that judged them; None when nothing is weak.

    Stamped records (protocol 8 on: rule.version_of) were decided by sequential looks against their floors, so a
    count of iterations or repeats says nothing of them: weak are the pairs left undecided (the pair's verdict
    inconclusive) and those judged at the default floor (no calibration fit) or at a given one; the note counts each.
    Older records (unstamped) keep the old rule of thumb: fewer than 8 iterations or 2 repeats per pair."""
    ok = [r for g in groups.values() for r, _ in g.values()
          if status_of(r) == "ok" and isinstance(r.get("summary"), dict)]
    stamped = [r for r in ok if rule.version_of(r["summary"]) is not None]
    parts, weak = [], set()
    if stamped:
        undecided = {id(r) for r in stamped if rule.pair_verdict(r["summary"]) == "inconclusive"}
        floors = {kind: {id(r) for r in stamped if any(isinstance(stamp, dict) and stamp.get("kind") == kind
                                                      for stamp in (r["summary"].get("floors_from") or {}).values())}
                  for kind in ("default", "given")}
        weak = undecided | floors["default"] | floors["given"]
        parts += [f"{len(undecided)} undecided (inconclusive)" if undecided else "",
                  f"{len(floors['default'])} judged at the {DEFAULT_FLOOR // KIB} KiB default floor (no calibration "
                  "fits them)" if floors["default"] else "",
                  f"{len(floors['given'])} at a given floor" if floors["given"] else ""]
    older = [r for r in ok if rule.version_of(r["summary"]) is None and r.get("spec")]
    if older and (min(r["spec"].get("repeats") or 1 for r in older) < 2
                  or min(r["spec"].get("iterations") or 0 for r in older) < 8):
        parts.append(f"{len(older)} judged before protocol 8 (unstamped) with fewer than 8 iterations or 2 repeats "
                     "per pair")
        weak |= {id(r) for r in older}
    parts = [p for p in parts if p]
    if not parts:
        return None
    versions = sorted({rule.version_of(r["summary"]) for r in stamped})
    how = (f"{', '.join(rule.version_text(v) for v in versions)} decided the other {len(ok) - len(weak)} by "
           "sequential looks against their floors; " if stamped else "")
    calibrate = ", or calibrate this machine (kerasbench calibrate)" if stamped and floors["default"] else ""
    return (f"note: of {len(ok)} pairs measured, {'; '.join(parts)}: those verdicts are weak ({how}measure the weak "
            f"ones longer, --profile full{calibrate}, before you trust them)")


def _build(env: Dict[str, Any]) -> Optional[str]:
    """'cpu' or 'full' for the TF build a record ran (its distribution), None when unknown (older records)."""
    name = env.get("tf_distribution")
    return None if not name else "cpu" if name.endswith("-cpu") else "full"


def build_text(env: Dict[str, Any]) -> str:
    """', nightly of DATE (tf-nightly-cpu, GIT_VERSION)' / ', tensorflow-cpu (GIT_VERSION)' for a side's line."""
    nightly, name, git = env.get("nightly") or {}, env.get("tf_distribution"), env.get("tf_git_version")
    if nightly:
        return (f", nightly of {nightly.get('day')} ({nightly.get('package')} {nightly.get('version')}, uploaded "
                f"{str(nightly.get('uploaded') or '')[:16]}{f', {git}' if git else ''})")
    return f", {name}{f' ({git})' if git else ''}" if name else ""


def render(cells: Sequence[Cell], groups: Groups, fmt: str, width: Optional[int] = None) -> str:
    """The comparison as text in `fmt` (one of FORMATS); a table fits `width` characters where one is given."""
    context = describe(groups)
    if fmt == "table":
        return render_table(cells, context, width)
    if fmt == "markdown":
        return render_markdown(cells, context)
    if fmt == "json":
        versions = sorted(groups, key=version_key)
        return render_json(cells, context, {"versions": versions, "baseline": cells[0]["baseline"] if cells else None})
    if fmt == "csv":
        return render_csv(cells)
    raise ValueError(fmt)
