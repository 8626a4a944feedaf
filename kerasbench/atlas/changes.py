"""A change's questions and what their answers confirm: the commands that explain it (questions.Question,
names checked), the settling triage, whether measuring its ends again confirmed it, and --answer's order.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..questions import Question
from ..column import Column
from ..compare.cells import Groups, hardware_note
from ..errors import UsageError
from ..releases import version_key
from .model import (_cli_version, _split, _state, counted_changes, main_axis, nightly_then_release, other_pythons,
                    rebuilds_in, verdict)


def commands(loop: str, strategy: str, good: str, bad: str,
             pythons: Optional[Dict[str, str]] = None) -> List[Question]:
    """The questions (answers.Question) that bisect, attribute and ablate the change of a pair from `good` to `bad`
    (columns), with only options those commands have: the release of each side, --python for a Python axis or for
    a column measured on another Python than the atlas' own (`pythons`, other_pythons: TF 2.8–2.11 on 3.10),
    ablate's --keras tf_keras for the tf_keras axis (triage and attribute measure the release's own Keras: not
    offered); a public report's row names its repro file (kerasbench/examples/reports/NAME.py), another repro
    `FILE`. A nightly then a release (columns in version order put a release at its branch cut, after the main
    branch's last nightly before it) has no triage: triage goes from a release or a nightly to a later nightly, not
    from a nightly to a release (nightly_then_release; the page says why); attribute takes two releases or two
    nightlies, not one of each. Names come from data files: a question whose name no registry knows (a loop, a
    strategy, a report row, a release's shape: answers.Question.problem) is not asked (no_command says why)."""
    return [q for q in _commands(loop, strategy, good, bad, pythons) if q.problem() is None]


def _commands(loop: str, strategy: str, good: str, bad: str,
              pythons: Optional[Dict[str, str]] = None) -> List[Question]:
    from ..loops import LOOPS
    from ..public import LOOP_PREFIX as REPORT
    from ..strategies import STRATEGIES

    pythons_of = pythons or {}
    good_col, bad_col = Column.parse(good), Column.parse(bad)
    good_rel, bad_rel = good_col.cli_release, bad_col.cli_release
    on = {c.python for c in (good_col, bad_col) if c.python}
    python = next(iter(on)) if len(on) == 1 and good_col.label == bad_col.label else ""
    other = sorted({pythons_of[c] for c in (good, bad) if c in pythons_of}, key=version_key)
    if other and not python:  # one end on an older Python (no wheel for the atlas' own): both ends measured on it
        python = other[0]
    known = loop in LOOPS and loop != "repro"  # a repro file's records: loop repro, the file not kept by name
    where = dict(loop=loop) if known else dict(report=loop[len(REPORT):]) if loop.startswith(REPORT) else \
        dict(placeholder=True)
    out = []
    backend = bad_col.backend
    one_release = backend or (good_rel == bad_rel and on)  # another backend or Python: no release to find
    strat = strategy if strategy in STRATEGIES else ""
    if backend and good_rel == bad_rel and not good_col.backend:  # the release's own backend, then another
        out.append(Question("attribute", "which backend carries it", backends=("tensorflow", backend), tf=bad_rel,
                            strategy=strat, **where))
    if (not one_release and "tf_keras" not in (good_col.label, bad_col.label) and (not on or python)
            and not nightly_then_release(good, bad)):
        out.append(Question("triage", "which release changed it", good=good_rel, bad=bad_rel, strategy=strat,
                            python=python, **where))
        # attribute takes two releases or two nightlies, not one of each: TF and Keras under two distributions'
        # names (tensorflow-cpu, tf-nightly-cpu) would be a second copy of one module (AcrossDistributions)
        if good_rel.startswith("nightly:") == bad_rel.startswith("nightly:"):
            out.append(Question("attribute", "which package carries it", good=good_rel, bad=bad_rel, strategy=strat,
                                python=python, **where))
    if rebuilds_in(loop) or not known:
        out.append(Question("ablate", "which cleanup steps it needs there", tf=bad_rel,
                            keras="tf_keras" if bad_col.label == "tf_keras" else "", backend=backend,
                            python=bad_col.python or pythons_of.get(bad, ""), **where))
    return out


def no_command(loop: str, strategy: str, good: str, bad: str,
               pythons: Optional[Dict[str, str]] = None) -> Tuple[str, List[str]]:
    """(why commands() offers nothing for this change: what each command cannot take there, the `kerasbench run` of
    each end that would measure it again); ('', []) when it offers one."""
    if commands(loop, strategy, good, bad, pythons):
        return "", []
    unknown = [q.problem() for q in _commands(loop, strategy, good, bad, pythons) if q.problem()]
    if unknown:  # a name from the data that no registry knows: nothing is planned from it, not even a run
        return f"No command answers this change here: {unknown[0]}.", []
    bad_rel, bad_label = _split(bad)
    if nightly_then_release(good, bad):
        release = "triage goes to a later nightly, not back to the release cut from it"
    elif "tf_keras" in (_split(good)[1], bad_label):
        release = "triage and attribute measure each release's own Keras, not tf_keras beside it"
    else:
        release = f"one release ({_cli_version(bad_rel)}) on another Python: no release to find or compare"
    return (f"No command answers this change here: {release}, and ablate takes apart the cleanup of loops that build "
            f"models, which {loop} does not. Both ends measured again would confirm or undo it:"), \
        end_runs(loop, strategy, good, bad)


def end_runs(loop: str, strategy: str, good: str, bad: str) -> List[str]:
    """The `kerasbench run … --profile full` of each end of a change (columns `good`, `bad`): its pair measured again,
    longer and three times (what confirms or undoes a change no command answers)."""
    runs = []
    for end in (good, bad):
        column = Column.parse(end)
        runs.append(f"kerasbench run --loop {loop} --strategy {strategy} --tf {_cli_version(column.release)}"
                    + (f" --python {column.python}" if column.python else " --keras tf_keras" if column.label ==
                       "tf_keras" else f" --backend {column.backend}" if column.backend else "") + " --profile full")
    return runs


BRANCH_CUT_NOTE = ("a nightly of the main branch, then a release cut from it: not one branch's history, and triage "
                   "goes from a release or a nightly to a later nightly, not back to a release: no triage here")


UNCONFIRMED = ("not confirmed: measured again by a command below, its two ends were not found different (alike, or "
               "too uncertain to tell); read the mark as the map's one measurement, not a change")
CONTESTED = ("contested: measured again by the commands below, one found its two ends alike and another found them "
             "different; the change sits at the edge of what one measurement decides")
SETTLED = ("settled: its answers disagreed, and its triage measured longer (the full profile: three repeats of up to "
           "a minute's loop at each end) found its two ends different, the same way: the mark holds")
REVERSED = ("not confirmed: its triage measured longer (the full profile) found its two ends different the other way; "
            "read the mark as the map's one measurement, not a change")
CONFIRMED = ("confirmed: measured again by a command below, its two ends (both on one machine) were found different "
             "the mark's way")
OTHER_WAY = ("not confirmed: measured again by a command below, its two ends were found different the other way; "
             "read the mark as the map's one measurement, not a change")
NEVER = ("not measured again: no command below has measured its two ends against each other yet; read the mark as "
         "the map's one measurement (the triage below measures both ends again)")
ACROSS = ("across machines: its two cells were measured on different machines ({}) and not measured again; the change "
          "may be the machine's (the triage below measures both ends on one)")
# What a mark is, by what measuring its two ends again said (confirmation): solid only when confirmed; every other
# kind is drawn pale and says why, and the page's first screen counts each kind.
SOLID = ("confirmed", "settled")


def mark_kind(note: str) -> str:
    """The kind of a mark from its confirmation note: confirmed, settled, not confirmed, contested, never measured
    again, across machines."""
    return {CONFIRMED: "confirmed", SETTLED: "settled", UNCONFIRMED: "not confirmed", REVERSED: "not confirmed",
            OTHER_WAY: "not confirmed",
            CONTESTED: "contested", NEVER: "never measured again"}.get(note, "across machines")


# The verdict of a change's two ends measured again (compare's, as a triage's answer keeps it) that a mark's direction
# expects
ENDS_OF_MARK = {"worse": "regressed", "better": "improved"}
# A contested change's own triage at the full profile: what settles it (settle_command), and what it asks
SETTLE_PROFILE = "full"
SETTLE_WHAT = "does it hold, measured longer"


def _nightly_range(q: Question) -> Optional[Tuple[Question, str, str]]:
    """(the triage with its ends blanked, its good day, its bad day) for a triage between two nightlies, else None."""
    if q.verb != "triage" or not (q.good.startswith("nightly:") and q.bad.startswith("nightly:")):
        return None
    return dataclasses.replace(q, good="", bad="", what=""), q.good[len("nightly:"):], q.bad[len("nightly:"):]


def _first_day(entry: dict) -> str:
    """The day (YYYY-MM-DD) of the first nightly a nightly triage's answer found like its bad end; '' if none."""
    first = Column(str(entry["result"].get("first_bad") or "")).cli_release \
        if ran_and_answered_entry(entry) else ""
    return first[len("nightly:"):] if first.startswith("nightly:") else ""


def wider(q: Question, answered: Optional[Dict[str, dict]]) -> Optional[Tuple[Question, dict]]:
    """(question, answer) of the narrowest answered triage of the same pair over nightlies around `q`'s (a nightly
    column measured since between its two ends split its change: the workflow adds a column a night) whose answer,
    the first nightly like its bad end, lies in `q`'s range; else None."""
    from ..questions import question_of

    mine = _nightly_range(q) if answered else None
    if mine is None:
        return None
    found = []
    for command, entry in answered.items():
        other = question_of(entry)
        theirs = _nightly_range(other) if other is not None else None
        day = _first_day(entry) if theirs else ""
        if (theirs and theirs[0] == mine[0] and theirs[1] <= mine[1] and theirs[2] >= mine[2] and command != q.command
                and mine[1] < day <= mine[2]):  # the nightly it found lies in this change's range
            found.append((theirs[1], theirs[2], other, entry))
    if not found:
        return None
    found.sort(key=lambda f: f[1])  # the earliest bad end ...
    found.sort(key=lambda f: f[0], reverse=True)  # ... of the latest good end (sorts are stable)
    return found[0][2], found[0][3]


def settle_command(cmds: Sequence[Question]) -> Optional[Question]:
    """The question that settles a contested change (commands()'s `cmds`): its triage at the full profile, whose first
    step measures both ends again, three repeats of up to a minute's loop each; None for a change with no triage."""
    triage = next((q for q in cmds if q.verb == "triage" and not q.profile), None)
    return dataclasses.replace(triage, what=SETTLE_WHAT, profile=SETTLE_PROFILE) if triage else None


def listed_commands(loop: str, strategy: str, good: str, bad: str, pythons: Optional[Dict[str, str]],
                    answered: Optional[Dict[str, dict]], before, after) -> List[Question]:
    """A change's questions as its list shows them: commands()'s, then its settling triage (settle_command) where
    its answers contest it (confirmation: CONTESTED) or that triage has run already. No attribution where the two
    cells were measured on builds of different distributions (a CPU nightly, then a full one: attribute refuses
    them)."""
    cmds = commands(loop, strategy, good, bad, pythons)
    if crossed_builds(before, after):
        cmds = [q for q in cmds if q.verb != "attribute"]
    settle = settle_command(cmds)
    if settle and answered and (settle.command in answered
                                or confirmation(cmds, answered, before, after) == CONTESTED):
        cmds = cmds + [settle]
    return cmds


def crossed_builds(before: Any, after: Any) -> bool:
    """Whether two cells' TF came from distributions of one module that attribute cannot swap (asvconf's
    across_distributions: tf-nightly-cpu, then tf-nightly); False where either record does not say."""
    from ..asvconf import across_distributions

    dists = [((r or {}).get("environment") or {}).get("tf_distribution") for r in (before, after)]
    return None not in dists and bool(across_distributions({dists[0]: ""}, {dists[1]: ""}))


def confirmation(cmds: Sequence[Question], answered: Optional[Dict[str, dict]], before, after,
                 moved: str = "") -> str:
    """What measuring a change's two ends (records `before`, `after`) again says against its mark, from its
    questions (listed_commands()'s) answered: UNCONFIRMED (one found them alike: answers.unconfirmed, a flip of the
    pair verdict between them or not), CONTESTED (that, and another found them different: a triage that bisected, a
    release attribution that measured a change to attribute), or '' (nothing measured them again to say otherwise).
    A settling triage that ran to an answer (settle_command: the longer measurement) decides alone: UNCONFIRMED when
    it found the ends alike; found different, SETTLED when its answer's ends went the mark's way (`moved`: worse is
    regressed, better improved), REVERSED the other way, and CONTESTED still when either is not known."""
    from ..questions import ends_verdict, unconfirmed

    if not answered:
        return ""
    flipped = verdict((before or {}).get("summary")) != verdict((after or {}).get("summary"))
    settled = [q for q in cmds if q.what == SETTLE_WHAT and ran_and_answered(q, answered)]
    if settled:
        entry = answered[settled[0].command]
        if unconfirmed(entry, flipped):
            return UNCONFIRMED
        found, expected = ends_verdict(entry), ENDS_OF_MARK.get(moved)
        return CONTESTED if found is None or expected is None else SETTLED if found == expected else REVERSED
    alike = [unconfirmed(answered.get(q.command), flipped) for q in cmds]
    if not any(alike):
        return ""
    differ = any(not same and q.verb in ("triage", "attribute") and q.good and ran_and_answered(q, answered)
                 for q, same in zip(cmds, alike))
    return CONTESTED if differ else UNCONFIRMED


def mark_note(cmds: Sequence[Question], answered: Optional[Dict[str, dict]], before, after, moved: str = "") -> str:
    """What a mark is drawn as: confirmation()'s note where its answers say something; CONFIRMED where a triage or
    attribution found its two ends different (a triage: the mark's way, where it says which); else NEVER, or ACROSS
    (with the machines) where its two cells were measured on different machines."""
    from ..questions import ends_verdict

    said = confirmation(cmds, answered, before, after, moved)
    if said:
        return said
    expected = ENDS_OF_MARK.get(moved)
    found = [ends_verdict((answered or {}).get(q.command)) for q in cmds
             if q.verb in ("triage", "attribute") and q.good and ran_and_answered(q, answered or {})]
    if any(f is None or expected is None or f == expected for f in found):
        return CONFIRMED
    if found:  # measured again, the ends different the other way
        return OTHER_WAY
    machines, differs = hardware_note(before, after)
    return ACROSS.format(machines) if differs else NEVER


def ran_and_answered_entry(entry: Optional[dict]) -> bool:
    """Whether an answers file's entry ran (exit 0) and gave an answer with words."""
    from ..questions import answered

    return answered(entry) and bool(entry["result"]["text"])


def ran_and_answered(q: Question, answered: Dict[str, dict]) -> bool:
    """Whether `q` ran (exit 0) and gave an answer in `answered` (an answers file's commands)."""
    return ran_and_answered_entry(answered.get(q.command))


def questions(groups: Groups, only: Sequence[str] = (), answered: Optional[Dict[str, dict]] = None) -> list:
    """Every command the list under the map names for its counted changes, once each, as answers.Question (what it
    asks, the command, the changes it explains): what `--answer` runs, the most telling first (a budget of
    commands answers the most of the map): a command that explains a flip of a label (verdict or what grew) before
    one that explains slope changes only, then the one that explains more changes, then the larger ratio of
    slopes; the list's order where these tie. `only`: the changes into or out of these columns (a column's label,
    or nightly:YYYY-MM-DD for a nightly's); a one-line UsageError names one that is not a column.
    `answered` (an answers file's commands): one answer for each change before a second (first_answers)."""
    columns = set(main_axis(groups))
    names = columns | {_cli_version(v) for v in columns}
    missing = [c for c in only if c not in names]
    if missing:
        raise UsageError(f"--answer-only {missing[0]!r} is not a column of this atlas; its columns: "
                         f"{', '.join(sorted(columns, key=version_key))} (a nightly's also as nightly:YYYY-MM-DD).")
    chosen = set(only)
    axis = main_axis(groups)  # the columns counted_changes names
    pythons = other_pythons(axis)
    found: Dict[str, Tuple[str, List[str]]] = {}
    telling: Dict[str, Tuple[bool, float]] = {}  # command: (explains a label's flip, the largest ratio of slopes)
    for loop, strategy, p, v in counted_changes(groups):
        if chosen and not chosen & {p, v, _cli_version(p), _cli_version(v)}:
            continue
        before, after = axis[p][(loop, strategy)][0], axis[v][(loop, strategy)][0]
        flip = _state(before) != _state(after)
        ratio = _ratio(before["summary"].get("growth_per_iter"), after["summary"].get("growth_per_iter"))
        for q in listed_commands(loop, strategy, p, v, pythons, answered, before, after):
            if q.placeholder:  # the page's hint for a repro of the user's: not runnable
                continue
            found.setdefault(q.command, (q, []))[1].append(f"{loop} × {strategy}, TF {p} → {v}")
            was = telling.get(q.command, (False, 1.0))
            telling[q.command] = (was[0] or flip, max(was[1], ratio))
    # a settling triage first (a mark the page cannot back until it runs; first_answers still puts the commands of
    # changes with no answer before it), then the most telling
    order = sorted(found, key=lambda c: (found[c][0].what != SETTLE_WHAT, not telling[c][0], -len(found[c][1]),
                                         -telling[c][1]))  # stable: ties keep the list's order
    asked = [dataclasses.replace(found[c][0], changes=tuple(found[c][1])) for c in order]
    return asked if answered is None else first_answers(asked, answered)


def first_answers(asked: Sequence, answered: Dict[str, dict]) -> list:
    """`asked` (questions()'s, the most telling first) so that a budget gives each change one answer before any a
    second: first, one at a time, the command not yet run that answers the most changes with no answer yet (its own
    command's, or a wider triage's: _answered_count's "with none"; the most telling of ties), then the rest in their
    order; commands a wider triage answers (wider) last. A command run that gave no answer (a failure, asked again)
    leaves its changes open: another of their commands comes first."""
    from ..questions import answered as is_answer

    own = functools.partial(ran_and_answered, answered=answered)
    tried = {c for c, entry in answered.items() if is_answer(entry)}  # a failure is asked again, not first
    around = {q.command for q in asked if q.command not in tried and wider(q, answered) is not None}
    covered = {c for q in asked if own(q) or q.command in around for c in q.changes}
    rest = [q for q in asked if q.command not in answered and q.command not in around]
    first = []
    while rest:
        best = max(rest, key=lambda q: len(set(q.changes) - covered))  # max keeps the first of ties
        if not set(best.changes) - covered:
            break
        first.append(dataclasses.replace(best, first=True))
        covered.update(best.changes)
        rest.remove(best)
    chosen = {q.command for q in first}
    return first + [q for q in asked if q.command not in chosen and q.command not in around] + [
        q for q in asked if q.command in around]


def _ratio(a: Optional[float], b: Optional[float]) -> float:
    """How many times the larger RSS slope of two is the smaller (slopes under 1 KiB/iteration count as 1 KiB)."""
    if a is None or b is None:
        return 1.0
    lo, hi = sorted((max(a, 1024.0), max(b, 1024.0)))
    return hi / lo


def answered_count(counted, answered: Optional[Dict[str, dict]], pythons: Optional[Dict[str, str]] = None,
                    notes: Optional[Dict[str, str]] = None) -> str:
    """The count after the list's heading: its commands run and answered, answered over a wider range, the changes
    `notes` (section's: change id -> confirmation) says are not confirmed, contested or settled, and the answers of
    changes no longer on the map."""
    if not answered:
        return ""
    said_again = [n for n in (notes or {}).values() if n in (UNCONFIRMED, CONTESTED, SETTLED, REVERSED)]
    alike = sum(note != SETTLED for note in said_again)  # drawn pale for what an answer said: not confirmed, contested
    contested, settled, reversed_ = (said_again.count(note) for note in (CONTESTED, SETTLED, REVERSED))
    listed = [listed_commands(c[1], c[2], c[3], c[4], pythons, answered, c[6], c[7])
              for c in counted]  # per change, once
    asked = {q.command for cmds in listed for q in cmds}
    ran = asked & set(answered)
    said = sum(ran_and_answered_entry(answered[cmd]) for cmd in ran)
    own = functools.partial(ran_and_answered, answered=answered)
    # a command answered for a change the map no longer has (a column measured since between its two ends: the
    # change is now steps between other columns) is kept in the file, not shown: said, not dropped in silence
    from ..questions import FILE as FILE_NAME

    gone = len(set(answered) - asked)
    questions_ = {q.command: q for cmds in listed for q in cmds}
    wide = {c for c, q in questions_.items() if not own(q) and wider(q, answered) is not None}  # asked once each
    around = len(wide - ran)
    covered = sum(any(own(q) or q.command in wide for q in cmds) for cmds in listed)  # its own answer or a wider's
    again = sum(any(q.verb in ("triage", "attribute") and own(q) for q in cmds)  # ends measured again
                for cmds in listed)
    longer = sum(any(q.profile == SETTLE_PROFILE and own(q) for q in cmds) for cmds in listed)
    bare = sum(not cmds for cmds in listed)
    bare = f", {bare} of them with no command to run: each says why" if bare else ""
    return (f"; {len(ran)} of their {len(asked)} commands run, {said} with an answer, shown below ({covered} of the "
            f"{len(counted)} changes with an answer beside one of their commands, {len(counted) - covered} with "
            f"none{bare})"
            + (f"; {around} more answered by a triage over a wider range of nightlies (a column measured since "
               "splits it), shown with its range" if around else "")
            + (f"; {alike - contested} not confirmed, of the {again} changes a triage or attribution measured again: "
               "the two ends not found different" + (f" ({reversed_} of them: the other way, measured longer)"
                                               if reversed_ else "")
               + (f", and {contested} contested: one answer found them alike, another different" if contested else "")
               + " (a pale, dashed mark on the map)" if alike else "")
            + (f"; {longer} contested before and measured longer by their triage (the full profile): {settled} "
               f"hold, {longer - settled} not confirmed (counted above)" if longer else "")
            + (f"; {FILE_NAME} holds {gone} more, of changes no longer on the map (columns measured since "
               "between their two ends)" if gone else ""))
