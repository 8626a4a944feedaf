"""Which package(s) carry a change: the bad environment's packages moved into the good one, or put back.

`kerasbench attribute --good A --bad B` (and `triage --attribute`, on the bracket triage found) takes the
pins of two environments (a TF release's asv environment, or an existing asv environment by name), and plans
(plan): the two ends; for each package whose pin differs, the good environment with that one package at the
bad side's version (a single); where the installer refuses a single (TF 2.14.0 requires keras >= 2.14), the
good environment with that package and the ones uv's reason names, moved together until they resolve (a
group: what pip would install); and the bad environment with each package put back (leave-one-out),
measured only when no single move carries the change. A pin set is planned once; --max-envs bounds the plan.
Each environment is made and measured by the command (commands/attribute.py: made as environment.python_for
makes any, measured in fresh workers) and classified here against the two ends as triage classifies a release
(triage.classify). The conclusion (conclude) says it in words: carried by X (X alone behaves like the bad
end), by X with Y (only the group does), by X and Y together (no single does; putting back either makes the
bad end good), or nothing reproduces it. Across the Keras 2 -> 3 switch (TF 2.15 -> 2.16), where no single move
installs, the Keras 3 end is measured with tf_keras in Keras 3's place (bridge_rows): "carried by Keras 3" when it
then behaves like the Keras 2 end, "by TensorFlow" when it does not. Pure: pins and records in, rows and words
out (nothing made, measured or asked of the package index; tests/test_imports.py checks what it imports).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Optional, Sequence, TextIO, Tuple

from .asvconf import INSTALLER_ONLY, REASON_PATTERNS, TF_KERAS_PIN, across_distributions, package_of
from .console import text_table
from .errors import UsageError
from .record import Record
from .versions import version_key

@dataclasses.dataclass
class Row:
    """One environment of the attribution: its pins, what it moved from the bad side, how it installed, its class.

    `kind` is 'end' (good, bad), 'single' (the good pins with one package moved), 'group' (with a package and the
    ones it needs to install unforced), 'leave-one-out' (the bad pins with `moved` put back to the good side) or
    'bridge' (across the Keras 2 -> 3 switch: an end with tf_keras in Keras 3's place; see bridge_rows).
    """

    label: str
    pins: Dict[str, str]
    moved: Tuple[str, ...] = ()
    kind: str = "end"
    python: str = ""
    env_name: str = ""
    forced: List[str] = dataclasses.field(default_factory=list)
    why: str = ""
    record: Optional[Record] = None
    cls: str = ""
    reason: str = ""
    refused: str = ""  # a group's: the installer's reason for refusing its first package alone
    also: str = ""  # the leave-one-out this environment also is ('bad with scipy 1.15.3')


@dataclasses.dataclass
class Plan:
    """The environments of an attribution: `rows` (ends, singles, groups) measured first; `leave_one_out` measured
    when no single package carries the change."""

    names: List[str]
    rows: List[Row]
    leave_one_out: List[Row]

    def count(self) -> int:
        """The most environments the attribution measures."""
        return len(self.rows) + len(self.leave_one_out)

    def describe(self) -> str:
        """'2 ends + 4 single + 1 group + 4 leave-one-out = 11 environments at most'."""
        kinds = [sum(r.kind == k for r in self.rows) for k in ("end", "single", "group", "bridge")]
        bridge = f" + {kinds[3]} Keras 2 bridge" if kinds[3] else ""
        return (f"{kinds[0]} ends + {kinds[1]} single + {kinds[2]} group{bridge} + {len(self.leave_one_out)} "
                f"leave-one-out (only when no single package carries it) = {self.count()} environments at most")


MAX_ENVS = 12  # --max-envs' default: 2.13.1 -> 2.14.0 (4 packages differ) plans 12


class AcrossDistributions(UsageError):
    """The two sides pin one module under two distributions' names (asvconf.across_distributions; nothing made)."""


def differing(good: Dict[str, str], bad: Dict[str, str]) -> List[str]:
    """The packages (the bad side's names, in its order) pinned differently in `bad` than in `good`, or only there."""
    have = {package_of(k): v for k, v in good.items()}
    return [name for name, version in bad.items()
            if name not in INSTALLER_ONLY and have.get(package_of(name)) != version]


def swapped(good: Dict[str, str], bad: Dict[str, str], names: Sequence[str]) -> Dict[str, str]:
    """`good` with `names` at their `bad` versions (a name only `good` pins keeps its place; one `bad` lacks goes)."""
    out = dict(good)
    where = {package_of(k): k for k in good}
    theirs = {package_of(k): k for k in bad}
    for name in names:
        mine, other = where.get(package_of(name), name), theirs.get(package_of(name))
        if other is None:
            out.pop(mine, None)
        else:
            out[mine] = bad[other]
    return out


def same_pins(a: Dict[str, str], b: Dict[str, str]) -> bool:
    """Whether two pin sets are one environment (names compared as the registry does)."""
    return {package_of(k): v for k, v in a.items()} == {package_of(k): v for k, v in b.items()}


def group_for(name: str, good: Dict[str, str], bad: Dict[str, str], names: Sequence[str],
              resolves: Callable[[Dict[str, str]], Tuple[bool, str]]) -> Tuple[Tuple[str, ...], str]:
    """(group, why): `name` and the other packages of `names` the installer's reasons name, moved together from `bad`
    into `good` until the pins resolve (at most len(names) tries); () when `name` resolves alone or no group does.
    `why` is the installer's reason for refusing `name` alone ('' when it resolved)."""
    group, first = [name], ""
    known = {package_of(n): n for n in names}
    for _ in range(len(names)):
        ok, reason = resolves(swapped(good, bad, group))
        if ok:
            return (tuple(group) if len(group) > 1 else ()), first
        first = first or reason
        said = [n for pattern in REASON_PATTERNS for n in pattern.findall(reason)]
        named = [known[package_of(n)] for n in said if package_of(n) in known]
        named = [n for n in dict.fromkeys(named) if n not in group]
        if not named:
            break
        group += named
    return (), first


def _moved_label(base: str, pins: Dict[str, str], names: Sequence[str]) -> str:
    """'good + tensorflow-cpu 2.14.0 + keras 2.14.0'."""
    return " + ".join([base] + [f"{n} {pins[n]}" for n in names])


def plan(good: Dict[str, str], bad: Dict[str, str],
         resolves: Optional[Callable[[Dict[str, str]], Tuple[bool, str]]] = None) -> Plan:
    """The environments: the two ends; the good one with each differing package moved alone; where the installer
    refuses one alone (`resolves`, a stand-in for uv: None, no groups), with the packages it needs (group_for);
    and the bad one with each differing package put back (leave-one-out). A pin set is planned once."""
    crossed = across_distributions(good, bad)
    if crossed:
        raise AcrossDistributions(
            "Cannot attribute across distributions: the good side pins "
            + ", ".join(f"{g} where the bad one pins {b}" for g, b in crossed)
            + "; a package moved into the other side's environment would be a second copy of one module, not a "
            "swap. Attribute two releases, or two nightlies of one build (a nightly triage's bracket).")
    names = differing(good, bad)
    if not names:
        raise UsageError("Nothing to attribute: the good and the bad environment pin the same packages.")
    rows = [Row("good", dict(good)), Row("bad", dict(bad), tuple(names))]

    def add(into: List[Row], row: Row) -> None:
        same = next((r for r in rows + into if same_pins(row.pins, r.pins)), None)
        if same is None:
            into.append(row)
        elif row.kind == "leave-one-out":  # that environment is also this return: the table says so
            same.also = row.label

    singles: List[Row] = []
    for name in names:
        add(singles, Row(_moved_label("good", bad, [name]), swapped(good, bad, [name]), (name,), "single"))
    groups: List[Row] = []
    for name in names if resolves else ():
        group, why = group_for(name, good, bad, names, resolves)
        if group:
            add(groups, Row(_moved_label("good", bad, group), swapped(good, bad, group), group, "group", refused=why))
    rows += singles + groups
    back: List[Row] = []
    theirs = {package_of(k): v for k, v in good.items()}
    for name in names:
        version = theirs.get(package_of(name))
        label = f"bad with {name} {version}" if version else f"bad without {name}"
        add(back, Row(label, swapped(bad, good, [name]), (name,), "leave-one-out"))
    return Plan(names, rows, back)


def keras_major(pins: Dict[str, str]) -> Optional[int]:
    """The major version of the keras a pin set installs (None when it pins none)."""
    version = next((v for k, v in pins.items() if package_of(k) == "keras"), None)
    try:
        return int(str(version).split(".")[0]) if version else None
    except ValueError:
        return None


def bridge_rows(good: Dict[str, str], bad: Dict[str, str], tf_name: str,
                tf_keras_for: Callable[[str], str]) -> List[Row]:
    """Across the Keras 2 -> 3 switch (TF 2.16), where no single move installs (TF 2.16 needs Keras 3, TF 2.15's
    tf.keras cannot import it): the Keras 3 end with tf_keras (the Keras 2 of its TF minor, TF_USE_LEGACY_KERAS=1)
    in Keras 3's place, and the Keras 2 end's other packages with that TF and tf_keras (TF moved, Keras 2 kept).
    `tf_name` is the TF package the pins name; `tf_keras_for(tf)` the tf_keras release of a TF release (a
    UsageError when it has none). [] when the ends' Keras majors are the same, or the Keras 3 end's TF has no
    tf_keras."""
    majors = keras_major(good), keras_major(bad)
    if None in majors or (majors[0] >= 3) == (majors[1] >= 3):
        return []
    k3_side, k2_side = ("bad", "good") if majors[1] >= 3 else ("good", "bad")
    k3, k2 = (bad, good) if k3_side == "bad" else (good, bad)
    tf3 = next((v for k, v in k3.items() if package_of(k) == package_of(tf_name)), None)
    if not tf3 or version_key(tf3)[:2] < (2, 16):
        return []
    try:
        tf_keras = tf_keras_for(tf3)
    except UsageError:
        return []
    pin = {TF_KERAS_PIN: f"--no-deps {tf_keras}"}
    names = [k for k in k3 if package_of(k) in (package_of(tf_name), "keras")]
    found = [Row(f"{k3_side} with tf_keras {tf_keras}", {**k3, **pin}, ("keras",), "bridge"),
             Row(f"{k2_side} with {tf_name} {tf3} and tf_keras {tf_keras}", {**swapped(k2, k3, names), **pin},
                 (tf_name, "keras"), "bridge")]
    return [row for i, row in enumerate(found) if not any(same_pins(row.pins, r.pins) for r in found[:i])]


def _describe(row: Row, good: Dict[str, str], bad: Dict[str, str]) -> str:
    """What a row's environment pins unlike the good one ('(the good pins)' for it), or, left out of the bad one,
    what it put back."""
    if row.kind == "leave-one-out":
        return "bad pins, " + ", ".join(f"{n} back to {good.get(n, 'none')}" for n in row.moved)
    moved = [f"{name} {row.pins[name]}" for name in row.pins
             if name not in INSTALLER_ONLY and good.get(name) != row.pins[name]]
    return ", ".join(moved) or "(the good pins)"


def _find(rows: Sequence[Row], pins: Dict[str, str]) -> Optional[Row]:
    """The row of that environment, if it was planned."""
    return next((r for r in rows if same_pins(r.pins, pins)), None)


def needs_leave_one_out(rows: Sequence[Row]) -> bool:
    """Whether to measure leave-one-out: no single move behaves like the bad end, or several like neither."""
    singles = [r for r in rows if r.kind == "single"]
    return not any(r.cls == "bad" for r in singles) or sum(r.cls == "unclear" for r in singles) >= 2


@dataclasses.dataclass
class Conclusion:
    """Which packages carry the change: `kind` is carried (each of `packages` alone), with (the first with the rest,
    which it needs to install), together (each necessary, none alone), needs (the one necessary, not alone),
    none (nothing reproduces it) or no change (the ends do not differ); `text` says it in words."""

    kind: str
    packages: List[str]
    text: str


def _names(rows: Sequence[Row]) -> str:
    """'tensorflow-cpu 2.14.0, keras 2.14.0' of single rows."""
    return ", ".join(f"{r.moved[0]} {r.pins[r.moved[0]]}" for r in rows)


def _and(items: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def conclude(rows: Sequence[Row], good: Dict[str, str], bad: Dict[str, str], differ: bool, why: str,
             what: str) -> Conclusion:
    """The conclusion from the classified rows (triage.classify against the two ends), in words."""
    if not differ:
        from .triage import ENDS_ALIKE

        return Conclusion("no change", [], f"No answer for {what}: {ENDS_ALIKE} ({why}).")
    names = differing(good, bad)
    singles = [r for r in rows if r.kind == "single"]
    carriers = [r for r in singles if r.cls == "bad"]
    groups = [r for r in rows if r.kind == "group" and r.cls == "bad"]
    back = {n: _find(rows, swapped(bad, good, [n])) for n in names}
    back = {n: r for n, r in back.items() if r is not None and r.record is not None and r.cls}
    necessary = [n for n, r in back.items() if r.cls == "good"]

    def at(side: Dict[str, str], some: Sequence[str]) -> str:
        return _and([f"{n} {side.get(n, '(none)')}" for n in some])

    bridged = [r for r in rows if r.kind == "bridge" and r.record is not None and r.cls]
    if bridged and not carriers:
        return _across_keras3(bridged, good, bad, what)
    said = []
    goods, unclear = [r for r in singles if r.cls == "good"], [r for r in singles if r.cls == "unclear"]
    failed = [r for r in unclear if (r.record or {}).get("status") == "failed"]  # a mix the body cannot run in
    unclear = [r for r in unclear if r not in failed]
    if goods:
        said.append(f"with {_names(goods)} alone the good environment behaves like the good end")
    if unclear:
        said.append(f"with {_names(unclear)} alone like neither end")
    if failed:
        said.append(f"with {_names(failed)} alone it fails to run (its row says why)")
    if necessary and (carriers or len(necessary) < 2):  # else the head says it
        said.append(f"putting back {at(good, necessary)} makes the bad end good")
    stays = [n for n, r in back.items() if r.cls == "bad"]
    if stays:
        said.append(f"putting back {at(good, stays)}{' (each alone)' if len(stays) > 1 else ''} leaves it like the "
                    "bad end")
    if len(names) == 1:  # the good environment with it moved is the bad end
        kind, packages = "carried", names
        head = f"carried by {at(bad, names)}, the only package that differs: the bad end behaves unlike the good " \
               f"one ({what})"
    elif carriers:
        kind, packages = "carried", [r.moved[0] for r in carriers]
        head = f"carried by {at(bad, packages)}: the good environment with {'it' if len(carriers) == 1 else 'each'} " \
               f"alone behaves like the bad end of {what}"
        forced = [r for r in carriers if r.forced]
        if forced:
            head += f" ({_names(forced)}: a forced install, see the install column)"
        confirmed = [g.label for g in groups if any(g.moved[0] == r.moved[0] for r in forced)]
        if confirmed:
            head += f"; so does the unforced {_and(confirmed)}"
    elif len(necessary) >= 2:
        kind, packages = "together", necessary
        head = f"carried by {at(bad, necessary)} together: none moved alone reproduces the change of {what}, and " \
               f"putting back any one of them makes the bad end good"
    elif groups:
        group = min(groups, key=lambda g: len(g.moved))
        lead = necessary[0] if necessary and necessary[0] in group.moved else group.moved[0]
        kind, packages = "with", [lead] + [n for n in group.moved if n != lead]
        head = f"carried by {at(bad, [lead])} with {at(bad, packages[1:])} (which the installer moves with it): " \
               f"{group.label} behaves like the bad end of {what}, no single move does"
    elif necessary:
        kind, packages = "needs", necessary
        head = f"carried by {at(bad, necessary)} with others: putting it back makes the bad end good, but moved " \
               f"alone it does not reproduce the change of {what}"
    else:
        kind, packages = "none", []
        head = f"nothing reproduces the change of {what}: no single package or group moved into the good " \
               f"environment behaves like the bad end (a package the pins do not name, or several together)"
    return Conclusion(kind, packages, "Answer: " + "; ".join([head] + said) + ".")


def _across_keras3(bridged: Sequence[Row], good: Dict[str, str], bad: Dict[str, str], what: str) -> Conclusion:
    """The answer across the Keras 2 -> 3 switch, from the bridges (the Keras 3 end with tf_keras, first)."""
    k3_side = "bad" if (keras_major(bad) or 0) >= 3 else "good"
    k2_side = "good" if k3_side == "bad" else "bad"
    k3 = bad if k3_side == "bad" else good
    keras3 = next((v for k, v in k3.items() if package_of(k) == "keras"), "3")
    first, rest = bridged[0], bridged[1:]
    also = "".join(f"; {r.label} behaves {r.reason}" for r in rest)
    if first.cls == k2_side:
        return Conclusion("keras 3", ["keras"], f"Answer: carried by Keras 3 (keras {keras3}): {first.label} behaves "
                          f"{first.reason} in {what}, so with Keras 2 in its place the change is gone{also}.")
    if first.cls == k3_side:
        return Conclusion("tensorflow", [], f"Answer: carried by TensorFlow, not Keras 3: {first.label} (Keras 2 in "
                          f"Keras 3's place) still behaves {first.reason} in {what}{also}.")
    return Conclusion("none", [], f"Answer: not decided across the Keras 3 switch in {what}: {first.label} behaves "
                      f"{first.reason}{also}.")


def render(rows: Sequence[Row], good: Dict[str, str], bad: Dict[str, str], metric: str, head: str,
           commands: Sequence[str], seconds: float) -> str:
    """The answer, the evidence table (environment, kind, pins, install, slope and CI, verdict, peak, class), the
    installer's reasons and the reproduce commands."""
    from .triage import _evidence

    table = []
    for row in rows:
        install = "resolved" if not row.forced else f"forced: {', '.join(row.forced)} --no-deps"
        if row.record is None:
            table.append([row.label, row.kind, _describe(row, good, bad), install if row.python else "",
                          "not measured", "", "", row.cls or "", row.reason])
            continue
        keras, growth, verdict, peak, note = _evidence(row.record, metric)
        note = "; ".join(filter(None, [f"= {row.also}" if row.also else "", note]))
        table.append([row.label, row.kind, _describe(row, good, bad), install, growth, verdict, peak, row.cls, note])
    lines = [head, "", *text_table(["environment", "kind", "pins", "install", "KiB/iter [95% CI]", "verdict",
                                    "peak MiB", "class", "note"], table)]
    whys = [(row.label, row.why) for row in rows if row.forced and row.why]
    if whys:
        lines += ["", "Forced installs (the installer's reason; the rest resolved, these with --no-deps, then "
                  "tensorflow and Keras imported):"]
        lines += [f"  {label}: {why}" for label, why in whys]
    groups = [row for row in rows if row.kind == "group"]
    if groups:
        lines += ["", "Groups (what the installer installs together, unforced; why the first alone is refused):"]
        lines += [f"  {row.label}: {row.refused}" for row in groups]
    measured = sum(row.record is not None for row in rows)
    lines += ["", f"{measured} environments measured, {seconds / 60:.1f} min.", "Reproduce:",
              *(f"  {row.label}: {c}" for row, c in zip(rows, commands))]
    return "\n".join(lines) + "\n"


def classify_rows(rows: Sequence[Row], ends: Tuple[Record, Record], metric: str, err: TextIO) -> None:
    """Each measured row (not an end) against the two ends, as triage classifies a release."""
    from . import triage
    from .console import status_line

    for row in rows:
        if row.kind == "end" or row.cls:
            continue
        if row.record is None:
            row.cls = "unclear"
            continue
        row.cls, row.reason = triage.classify(metric, *ends, row.record) if row.record["status"] == "ok" \
            else ("unclear", f"like neither end: {row.record['status']}: {row.record['reason']}")
        row.record["triage"] = {"class": row.cls, "why": row.reason}
        status_line(err, f"attribute: {row.label}: {row.reason}", final=True)


class TooManyEnvironments(UsageError):
    """The attribution's plan needs more environments than --max-envs allows (nothing was made)."""


def check_max_envs(count: int, max_envs: Optional[int], plan_text: str = "") -> None:
    """TooManyEnvironments (a UsageError) when an attribution would measure more environments than --max-envs."""
    if max_envs is not None and count > max_envs:
        raise TooManyEnvironments(f"attribute needs {count} environments ({plan_text or 'at least'}), more than "
                         f"--max-envs {max_envs}: give --max-envs {count}, or two environments closer together.")


def summary(rows: Sequence[Row], metric: str, good: Optional[Dict[str, str]] = None,
            bad: Optional[Dict[str, str]] = None) -> dict:
    """The attribution as JSON-ready data (beside the records in a --json file): every row, and the conclusion."""
    good = good if good is not None else rows[0].pins
    bad = bad if bad is not None else rows[1].pins
    differ = rows[0].cls == "good" and rows[1].cls == "bad"
    spec = (rows[1].record or {}).get("spec") or {}
    what = f"{spec.get('loop', '?')} × {spec.get('strategy', '?')} ({metric})"
    found = conclude(rows, good, bad, differ, rows[1].reason, what)
    return {"metric": metric, "conclusion": {"kind": found.kind, "packages": found.packages, "text": found.text},
            "rows": [{"label": r.label, "kind": r.kind, "pins": r.pins, "moved": list(r.moved), "forced": r.forced,
                      "why": r.why, "refused": r.refused, "class": r.cls, "env": r.env_name} for r in rows]}



# Across Keras 3's backends (attribute --backends): one pair measured on each, in one environment ---------------------


# The conclusions where every backend reads alike (all grow, all flat: backends_alike, which answers keep as data: a
# change the atlas marks as a flip between two backends' columns that, measured again, every backend shares is not
# confirmed).
BACKENDS_ALIKE = ("The growth follows Keras", "No growth on any backend")


def backends_alike(verdicts: Dict[str, Tuple[str, str]]) -> bool:
    """Whether every backend reads alike, decided: all grow (two or more), or none grows and none is undecided."""
    said = [v for v, _ in verdicts.values()]
    return (said.count("grows") == len(said) > 1) or (bool(said) and said.count("flat") == len(said))


def backends_conclusion(verdicts: Dict[str, Tuple[str, str]], records: Optional[Dict[str, Record]] = None) -> str:
    """Whose growth it is, from each backend's pair verdict (`rule.pair_verdict`: grows, flat or inconclusive, each
    decided by the protocol at its floors, as a package attribution's ends are) and what it says of it: growth on
    every backend follows Keras (or what they share), and, given their `records`, whether at one size (sizes_text);
    on some, it is those backends'; any backend undecided leaves the answer open, said with what would decide it."""
    grows = [b for b, (v, _) in verdicts.items() if v == "grows"]
    flat = [b for b, (v, _) in verdicts.items() if v == "flat"]
    open_ = [b for b in verdicts if b not in grows and b not in flat]
    if open_:
        known = "; ".join(f"{b} {verdicts[b][0]}" for b in grows + flat)
        return (f"Not decided: {_and(open_)} {'is' if len(open_) == 1 else 'are'} inconclusive"
                f"{' (' + known + ')' if known else ''}; measure longer (--profile full) or with --repeats 3.")
    if len(grows) == len(verdicts) and len(grows) > 1:
        return (f"{BACKENDS_ALIKE[0]}: it grows on every backend measured ({_and(grows)}), so it is Keras's "
                "own (or a package every backend shares), not one backend's" + sizes_text(records or {}) + ".")
    if grows:
        whose, it = ("that backend's", "it") if len(grows) == 1 else ("those backends'", "them")
        return (f"Only on {_and(grows)}: flat on {_and(flat)} with the same Keras and loop, so the growth is "
                f"{whose} (or how Keras drives {it}), not Keras's alone.")
    return f"{BACKENDS_ALIKE[1]} measured ({_and(flat)}): nothing to attribute."


def sizes_text(records: Dict[str, Record], metric: str = "growth_per_iter") -> str:
    """Whether backends that all grow grow at one size, by compare's rule on the RSS slope (CIs apart by more than the
    floor) between the fastest and each other: '' without records; else the slopes and, where one differs, how many
    times the fastest's it is. An atlas mark between two backends' columns is often that size, not the verdict."""
    from .compare.judging import cell_side, judge
    from .units import kib_text

    sides = {b: cell_side(r, metric) for b, r in records.items() if r.get("status") == "ok"}
    sides = {b: side for b, side in sides.items() if side.get("value") is not None}
    if len(sides) < 2:
        return ""
    fastest = max(sides, key=lambda b: sides[b]["value"])
    slopes = ", ".join(f"{b} {kib_text(sides[b]['value'], ',')}" for b in sides)
    said = {b: judge(metric, sides[fastest], sides[b])[0] for b in sides if b != fastest}
    smaller = [b for b, verdict in said.items() if verdict == "improved"]
    # a backend that grows in its heap only: its RSS slope is not the size of what grows (torch's inference ×
    # rebuild_no_clear: RSS +0.2 KiB/iteration, flat; the heap grows), so the sentence says so beside it
    heap_only = "; ".join(
        f"{b}'s RSS {s.get('verdict')}, its heap growing {kib_text(s.get('heap_growth_per_iter'), ',')} KiB/iteration"
        for b, s in ((b, records[b].get("summary") or {}) for b in sides)
        if s.get("verdict") != "grows" and s.get("heap_verdict") == "grows")
    heap_only = f" ({heap_only})" if heap_only else ""
    if smaller:
        times = ", ".join(f"{b} ×{sides[b]['value'] / sides[fastest]['value']:.3g}" for b in smaller)
        return (f"; but not at one size ({slopes} KiB/iteration: {times} of {fastest}'s, compare's slope rule), so "
                f"the size is the backend's{heap_only}")
    if all(verdict == "unchanged" for verdict in said.values()):
        return f", at one size ({slopes} KiB/iteration, within the floor){heap_only}"
    return f"; their sizes not decided ({slopes} KiB/iteration: CIs too wide to tell){heap_only}"


BACKENDS_HEADERS = ["backend", "verdict", "RSS KiB/iter [95% CI]", "heap KiB/iter [95% CI]", "iterations", "traces"]


def backends_table(rows: Sequence[Tuple[str, Record]]) -> List[List[str]]:
    """A row per backend: the pair verdict, RSS and heap verdicts with their slopes (KiB/iteration) and 95 % CIs, what
    was measured, traces (n/a where the backend traces nothing: torch, eager)."""
    from .rule import pair_verdict
    from .units import kib_text

    table = []
    for backend, record in rows:
        s = record.get("summary") or {}
        if record.get("status") != "ok":
            table.append([backend, record.get("status", "?"), "", "", "", str(record.get("reason") or "")])
            continue
        rss = (f"{s.get('verdict')} {kib_text(s.get('growth_per_iter'))} "
               f"[{kib_text(s.get('growth_ci_low'))}, {kib_text(s.get('growth_ci_high'))}]")
        heap = (f"{s.get('heap_verdict')} {kib_text(s.get('heap_growth_per_iter'))} "
                f"[{kib_text(s.get('heap_growth_ci_low'))}, {kib_text(s.get('heap_growth_ci_high'))}]")
        measured = s.get("measured")  # iterations per repeat
        measured = ",".join(map(str, measured)) if isinstance(measured, list) else str(measured or "")
        table.append([backend, pair_verdict(s), rss, heap, measured,
                      "n/a" if s.get("all_traces") is None else f"{s['all_traces']:.0f}"])
    return table
