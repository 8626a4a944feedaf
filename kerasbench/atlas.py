"""The atlas of `kerasbench report`: every (loop, strategy) pair against every TF version on one map.

A row per loop × strategy, a column per version as `compare` groups the records (compare.load / compare.group: a
release with tf_keras, another Python or another side is a column of its own, `2.16.2+tf_keras`), in
releases.version_key order. Each cell is the pair's one verdict (rule.pair_verdict: RSS and heap together, as the
run table's), what grew (`growth_kind`, rule.growth_kind) and the RSS slope (`growth_per_iter`, KiB/iteration); its
tooltip and a click name the RSS and heap verdicts it comes from and add the peak, the heap slope and the trace
counts. A cell is read against the previous column of its axis (the previous release with the same label; a
labelled column's first falls back to the plain releases) and marked (`mark`) where compare's rule on the RSS slope
says regressed or improved (compare.figures_verdict: its CI apart by more than the floor), else where its verdict or
what grew flipped between decided readings: a thick left border and ▲ (worse) or ▼ (better), and below the map the
commands that bisect (triage), attribute and ablate that change, with only the options those commands have. A flip
with a side undecided (◆) is not a change: not counted, shown on demand (a checkbox).
Two selects filter the rows by loop and strategy. Everything is inline (no network); every string from a record
goes through the page kit's esc (kerasbench.page), a change's picture is the drawing kit's (kerasbench.draw.spark).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import json
import math
import os
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import __version__, compare, draw, rule
from .questions import Question
from .column import Column
from .errors import UsageError
from .machine import FINGERPRINT_KEYS
from .record import OTHER_BACKENDS as BACKENDS
from .releases import version_key
from .rule import DEFAULT_FLOOR
from .page import esc, finite, frame, kib, linked, made_from, mib, no_paths
from .units import KIB, MIB, floor_kib

# Worse and better are claims: only between decided readings (an `inconclusive` side, or a settling or step, is
# a different reading, not a better or a worse one: 2.21.0's notebook × reuse_model is not "better" for being
# undecided where 2.12.1 grows).
VERDICT_RANK = {"flat": 0, "grows": 1}
KIND_RANK = {"flat": 0, "retention": 1, "leak": 2}
GLYPHS = {"worse": "▲", "better": "▼", "other": "◆"}
TRACES = ("train_path_traces", "predict_path_traces", "all_traces", "train_traces", "predict_traces")


def _split(version: str) -> Tuple[str, str]:
    """'2.16.2+tf_keras' -> ('2.16.2', 'tf_keras'); '2.21.0' -> ('2.21.0', '') (column.Column's parts)."""
    column = Column.parse(version)
    return column.release, column.label


def previous(version: str, versions: Sequence[str]) -> Optional[str]:
    """The column a column is read against: the last one before it (version order) of an earlier release with the
    same axis label; for a labelled column with none, a backend's or a Python's (2.21.0+torch, 2.21.0+py3.12) the
    plain column of its own release where there is one (what the backend or the Python changes, alone), tf_keras's
    and the rest the last plain release before (not a nightly: tf_keras goes on from Keras 2); else None."""
    return previous_all([*versions, version])[version]


def previous_all(versions: Sequence[str]) -> dict:
    """{column: previous(column)} of every column at once: one sort and one pass, each version's key read once (the
    atlas' cost stays linear in its columns; a column at a time was quadratic: 3000 columns did not finish)."""
    keys = {v: (version_key(_split(v)[0]), version_key(v)) for v in versions}
    plain = {keys[v][0]: v for v in versions if not _split(v)[1]}  # each release's own plain column
    by_release = sorted(keys, key=lambda v: keys[v][0])
    last: dict = {}  # axis label -> its last column (version order) of the releases passed so far
    release = None  # the last plain column of those that is a release, not a nightly
    out, passed = {}, 0
    for v in by_release:
        while passed < len(by_release) and keys[by_release[passed]][0] < keys[v][0]:
            u = by_release[passed]
            label = _split(u)[1]
            if label not in last or keys[u][1] >= keys[last[label]][1]:
                last[label] = u
            if not label and "dev" not in u and (release is None or keys[u][1] >= keys[release][1]):
                release = u  # where a first tf_keras column goes on
            passed += 1
        label = _split(v)[1]
        own = plain.get(keys[v][0]) if label in BACKENDS or re.fullmatch(r"py\d+\.\d+", label) else None
        out[v] = last.get(label) or (own or release or last.get("") if label else None)
    return out


def verdict(summary) -> str:
    """A cell's verdict: the pair's one verdict (rule.pair_verdict, RSS and heap together); 'n/a' where the summary
    has no RSS verdict."""
    return rule.pair_verdict(summary) if (summary or {}).get("verdict") else "n/a"


def verdicts_text(summary) -> str:
    """The pair's verdict with the RSS and heap verdicts it comes from: 'grows (RSS flat, heap grows)'."""
    return f"{verdict(summary)} (RSS {summary.get('verdict') or 'n/a'}, heap {summary.get('heap_verdict') or 'n/a'})"


def _state(record) -> Optional[Tuple[str, Optional[str]]]:
    if record is None or record.get("status") != "ok":
        return None
    s = record.get("summary") or {}
    return (verdict(s), s.get("growth_kind")) if s.get("verdict") else None


def change(before, after) -> Optional[str]:
    """'worse', 'better' or 'other' when the (pair's verdict, what grew) of two records differ; None when the same or
    either is missing, not ok or has no verdict."""
    a, b = _state(before), _state(after)
    if a is None or b is None or a == b:
        return None
    for rank, i in ((VERDICT_RANK, 0), (KIND_RANK, 1)):
        if a[i] == b[i]:
            continue
        ra, rb = rank.get(a[i]), rank.get(b[i])
        if ra is None or rb is None:  # a side undecided: different, neither worse nor better
            return "other"
        return "worse" if rb > ra else "better"
    return "other"


def mark(before, after) -> Optional[Tuple[str, str]]:
    """(kind, why) of a cell read against the previous column's, or None. compare's rule on the RSS slope first
    (compare.figures_verdict: the CIs apart by more than the floor): regressed is 'worse', improved 'better', whatever
    the labels; where it says neither, the flip of the pair's (verdict, what grew) (`change`): 'worse' or 'better'
    between decided readings, 'other' where a side is undecided (not a change: shown on demand, not counted)."""
    if _state(before) is None or _state(after) is None:
        return None
    judged, why = compare.figures_verdict(before, after)
    if judged in ("regressed", "improved"):
        times = compare.ratio(*(finite_or_none(r["summary"].get("growth_per_iter")) for r in (before, after)))
        size = f", ×{times:.3g}" if times is not None else ""
        return ("worse" if judged == "regressed" else "better"), f"compare: RSS slope {judged}{size} ({why})"
    flip = change(before, after)
    if flip is None:
        return None
    floors = floors_apart(before, after)
    if floors:  # a flip of labels read at other floors: the floors moved, not necessarily the memory
        return "other", f"judged at other floors ({floors}): not counted as a change; compare on the RSS slope: " \
                        f"{judged} ({why})"
    said = "a side is undecided: not counted as a change" if flip == "other" else "the verdict or what grew flipped"
    return flip, f"{said}; compare on the RSS slope: {judged} ({why})"


def floors_apart(before, after) -> str:
    """'' when two cells' floors came from the same kind of source, series by series (calibration, settling,
    default …; unstamped cells: unknown, taken as alike); else what differs: 'heap: settling → the 64 KiB default'.
    A Python without a calibration judges at the default floors: its flips against a calibrated column are the
    floors'."""
    out = []
    for series in ("rss", "heap"):
        kinds = [rule.stamp_kind(((r.get("summary") or {}).get("floors_from") or {}).get(series))
                 for r in (before, after)]
        if None not in kinds and kinds[0] != kinds[1]:
            out.append(f"{'RSS' if series == 'rss' else series}: {kinds[0]} → {kinds[1]}")
    return ", ".join(out)


def finite_or_none(value: Any) -> Optional[float]:
    return float(value) if finite(value) else None


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
    from .loops import LOOPS
    from .public import LOOP_PREFIX as REPORT
    from .strategies import STRATEGIES

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
    for column in (good, bad):
        rel, label = _split(column)
        python = re.fullmatch(r"py(\d+\.\d+)", label)
        runs.append(f"kerasbench run --loop {loop} --strategy {strategy} --tf {_cli_version(rel)}"
                    + (f" --python {python.group(1)}" if python else f" --keras {label}" if label == "tf_keras"
                       else f" --backend {label}" if label in BACKENDS else "") + " --profile full")
    return runs


def nightly_then_release(good: str, bad: str) -> bool:
    """Whether the change goes from a nightly to a release (the nightly of 2026-01-15 → 2.21.0, at its branch cut)."""
    ends = [_cli_version(_split(c)[0]).startswith("nightly:") for c in (good, bad)]
    return ends == [True, False]


BRANCH_CUT_NOTE = ("a nightly of the main branch, then a release cut from it: not one branch's history, and triage "
                   "goes from a release or a nightly to a later nightly, not back to a release: no triage here")


def rebuilds_in(loop: str) -> bool:
    """Whether `loop` is a built-in loop that builds models (rebuild_no_clear applies): one `ablate` takes apart."""
    from .loops import LOOPS
    from .strategies import STRATEGIES

    return loop in LOOPS and "rebuild_no_clear" in STRATEGIES and loop in STRATEGIES["rebuild_no_clear"].applies_to


def _cli_version(release: str) -> str:
    """A column's release as the commands take it: a nightly's label (2.22.0-dev20260514) is nightly:2026-05-14."""
    return Column(release).cli_release


def _details(record, version, floors: Optional[Dict[str, int]] = None) -> List[str]:
    """A cell's lines (the page's hover and focus list). `floors`: the page's floors stamps by number (section's), a
    cell naming its stamp's number, the words once under the map (a stamp is a column's, 2000 cells repeated it)."""
    s = _slim_summary(record.get("summary"))  # as the data keeps it: a page from records and one from data agree
    lines = [f"TF {version}: {verdicts_text(s)}, RSS slope {kib(s.get('growth_per_iter'))} KiB/iteration"
             + (f" (95% CI {kib(s.get('growth_ci_low'))} … {kib(s.get('growth_ci_high'))})"
                if finite(s.get("growth_ci_low")) else ""),
             f"what grew: {s.get('growth_kind') or 'n/a (heap not read)'}",
             f"peak: {mib(s.get('peak_loop'))} (over baseline {mib(s.get('peak_over_baseline'))})",
             f"heap slope: {kib(s.get('heap_growth_per_iter'))} KiB/iteration"
             + (f" (95% CI {kib(s.get('heap_growth_ci_low'))} … {kib(s.get('heap_growth_ci_high'))})"
                if finite(s.get("heap_growth_ci_low")) else "")]
    traces = [f"{k} {s[k]:g}" for k in TRACES if finite(s.get(k))]
    lines.append("traces: " + (", ".join(traces) if traces else "n/a"))
    if s.get("repeats") is not None:
        heap = f", heap floor {floor_kib(s['heap_floor'])}" if finite(s.get("heap_floor")) else ""
        counts = s.get("measured")
        measured = (f", {','.join(str(n) for n in counts)} iterations measured"
                    if isinstance(counts, list) and counts else "")
        lines.append(f"repeats: {s.get('repeats')}{measured}, floor {floor_kib(s.get('floor'))}{heap} KiB/iteration")
    text = floors_text(s.get("floors_from"))  # the protocol: once, in the map's line
    if floors is None:
        lines.append(f"floors from {text}")
    else:
        lines.append(f"floors [{floors.setdefault(text, len(floors) + 1)}], listed under the map")
    if s.get("why"):
        lines.append(f"not decided: {no_paths(s['why'])}")
    return lines


def floors_text(stamps: Any) -> str:
    """Where a cell's floors came from, in words (a summary's floors_from): 'RSS: the 64 KiB default (no
    calibration)', 'RSS: calibration glibc-….json', 'heap: TF's settling (made on this TF/Keras)'."""
    if not isinstance(stamps, dict) or not stamps:
        return "not recorded (records before protocol 8)"
    words = []
    for series, stamp in stamps.items():
        stamp = stamp if isinstance(stamp, dict) else {}
        kind = stamp.get("kind")
        if kind == "calibration":
            what = f"calibration {no_paths(stamp.get('file'))}"
        elif kind == "settling":
            made = "made on another TF/Keras: ×2" if stamp.get("foreign") else "made on this TF/Keras"
            what = f"TF's settling ({made})"
        elif kind == "given":
            what = f"given ({no_paths(stamp.get('source'))})"
        else:
            what = f"the {DEFAULT_FLOOR // KIB} KiB default (no calibration)"
        words.append((series, what))
    if len({what for _, what in words}) == 1:
        return f"{' and '.join('RSS' if s == 'rss' else s for s, _ in words)}: {words[0][1]}"
    return "; ".join(f"{'RSS' if s == 'rss' else s}: {what}" for s, what in words)


def _cell(record, version, prev, prev_record, cid,
          floors: Optional[Dict[str, int]] = None) -> Tuple[str, Optional[Tuple[str, str]]]:
    """(one <td>, its mark: (kind, why), or None)."""
    if record is None:
        return f'<td class="na" title="not measured on TF {esc(version)}">n/a</td>', None
    if record.get("status") != "ok":
        label = "n/a" if record.get("status") == "skipped" else "failed"
        return (f'<td class="na {label}" title="{esc(record.get("status"))}: {esc(no_paths(record.get("reason")))}">'
                f"{label}</td>"), None
    s = record.get("summary") or {}
    shown, kind = verdict(s), s.get("growth_kind")
    marked = mark(prev_record, record) if prev else None
    moved = marked[0] if marked else None
    tip = _details(record, version, floors)
    glyph, cls = "", f"v-{shown}"
    if marked:
        p = prev_record["summary"]
        tip[:0] = [f"{'changed' if moved != 'other' else 'a side undecided'} from TF {prev}: "
                   f"{verdict(p)}/{p.get('growth_kind') or '-'} → {shown}/{kind or '-'} "
                   f"({kib(p.get('growth_per_iter'))} → {kib(s.get('growth_per_iter'))} KiB/it)", marked[1]]
        hardware = compare.hardware_note(prev_record, record)[1]
        if hardware:
            tip.insert(2, f"different hardware ({hardware}): the change may be the machine's")
        glyph = f'<span class="glyph">{GLYPHS[moved]}</span>'
        cls += f" changed {moved}" if moved != "other" else " undecided other"
    more = "".join(f"<li>{esc(line)}</li>" for line in tip)
    if moved:
        more += f'<li><a href="#{cid}">commands for this change ↓</a></li>'
    kind_html = f'<span class="kind k-{esc(kind)}">{esc(kind)}</span>' if kind else ""
    return (f'<td class="{esc(cls)}" tabindex="0">{glyph}'
            f'<span class="verdict">{esc(shown)}</span>{kind_html}'
            f'<span class="slope">{esc(kib(_slim(s.get("growth_per_iter"))))} KiB/it</span>'
            f'<ul class="more">{more}</ul></td>'), marked


def spark(before, after, p: str, v: str, width: int = 260, height: int = 64) -> str:
    """A change's picture (draw.spark): the RSS of each side's first repeat after each iteration, MiB over its first
    reading, on one scale (grey: the previous version, red: this one, each named in its legend); '' when a side has
    no series."""
    sides = [rss_mib(r) for r in (before, after)]
    if not all(sides):
        return ""
    return draw.spark(sides, ("#999", "#c33"), (f"TF {p}", f"TF {v}"), width, height)


def _keras(column) -> str:
    """'Keras 3.6.0' (or 'tf_keras 2.16.0'): the Keras package of a column's records, '' if none says or they differ."""
    found = {((r.get("environment") or {}).get("keras_package") or "keras", (r.get("environment") or {}).get("keras"))
             for r, _ in column.values() if (r.get("environment") or {}).get("keras")}
    if len(found) != 1:
        return ""
    package, version = next(iter(found))
    return f"{'Keras' if package == 'keras' else package} {version}"


def _count(pairs, versions, groups: compare.Groups, changes) -> str:
    """The map in one line: pairs × versions, cells measured, changes by kind."""
    measured = sum(1 for pair in pairs for v in versions
                   if (groups[v].get(pair, (None, None))[0] or {}).get("status") == "ok")
    kinds = [item[5] for item in changes]  # (cid, loop, strategy, prev, version, moved, before, after, why)
    by = ", ".join(f"{kinds.count(k)} {k}" for k in ("worse", "better") if kinds.count(k))
    flips = sum(1 for item in changes if item[5] != "other" and not item[8].startswith("compare:"))
    n, undecided = len(kinds) - kinds.count("other"), kinds.count("other")
    parts = [f"{n - flips} by compare's rule on the RSS slope" if flips and n - flips else "",
             f"{flips} verdict flip{'' if flips == 1 else 's'} compare does not call" if flips else ""]
    how = "".join(f"; {part}" for part in parts if part)
    judged = {rule.version_of(r.get("summary")) for g in groups.values() for r, _ in g.values()
              if (r or {}).get("status") == "ok"}
    return (f"{len(pairs)} pairs × {len(versions)} versions: {measured} cells measured; {n} "
            f"change{'' if n == 1 else 's'} from one version to the next" + (f" ({by}{how})" if by else "")
            + (f"; {undecided} flip{'' if undecided == 1 else 's'} with a side undecided (◆, not counted)"
               if undecided else "")
            + f"; judged by {', '.join(sorted(rule.version_text(v) for v in judged))}.")


def _floors_legend(floors: Dict[str, int]) -> str:
    """The floors stamps the cells name by number ("floors [2]"), each in words once."""
    if not floors:
        return ""
    items = "; ".join(f'<span id="atlas-floors-{n}">[{n}] {esc(text)}</span>' for text, n in floors.items())
    return f'<p class="read floors">Floors each cell was judged at (a cell names its number): {items}.</p>'


def _unmeasured(pairs, groups: compare.Groups, versions) -> str:
    """One line naming the pairs no version measured: per strategy, its loops and why (its first skip reason)."""
    if not pairs:
        return ""
    by_strategy: dict = {}
    for loop, strategy in pairs:
        loops, reasons = by_strategy.setdefault(strategy, ([], []))
        loops.append(loop)
        for v in versions:
            record = groups[v].get((loop, strategy), (None, None))[0]
            if record and record.get("reason") and not reasons:
                reasons.append(no_paths(record["reason"]))
    parts = [f"{strategy} ({', '.join(loops)})" + (f": {reasons[0]}" if reasons else ": no record")
             for strategy, (loops, reasons) in by_strategy.items()]
    return (f'<p class="read unmeasured">Not measured on any version, so not drawn ({len(pairs)} '
            f'pair{"" if len(pairs) == 1 else "s"}): '
            f'{esc("; ".join(parts))}.</p>')


def _python_minor(column) -> Optional[str]:
    """'3.11': the Python of a column's records (the most common, from their environments), None if none says."""
    from .loading import _python_minor as minor  # compare's rule for a record's Python

    found = collections.Counter(minor(r.get("environment") or {}) for r, _ in column.values())
    found.pop("", None)
    return found.most_common(1)[0][0] if found else None


def other_pythons(groups: compare.Groups) -> Dict[str, str]:
    """{column: 'X.Y'} of the unlabelled columns measured on another Python than most of them (TF 2.8–2.11 on 3.10:
    no wheel for the atlas' own 3.11): their commands must name it (`commands`)."""
    found = {v: _python_minor(column) for v, column in groups.items() if not _split(v)[1]}
    counts = collections.Counter(p for p in found.values() if p)
    own = max(counts, key=lambda p: (counts[p], version_key(p))) if counts else None  # a tie: the newer Python
    return {v: p for v, p in found.items() if p and p != own}


def main_axis(groups: compare.Groups) -> compare.Groups:
    """`groups` with the main Python's columns unlabelled: when a release is measured on several Pythons, compare
    labels each (2.16.2+py3.10, 2.16.2+py3.11, …), also the one on the Python every unlabelled release ran on; that
    one is the release's plain column here, so the releases after it are read against it (not against the release
    before it) and its changes get the triage and attribute commands."""
    pythons = collections.Counter(_python_minor(column) for v, column in groups.items() if not _split(v)[1])
    pythons.pop(None, None)
    if not pythons:
        return groups
    main = f"py{pythons.most_common(1)[0][0]}"
    out = {}
    for v, column in groups.items():
        release, label = _split(v)
        out[release if label == main and release not in groups else v] = column
    return out


def section(groups: compare.Groups, answered: Optional[Dict[str, dict]] = None, trust: Sequence[str] = ()) -> str:
    """The atlas as a <div id="atlas"> (its own style and script inline; not a <section>: those are the loop
    shapes'); '' for records of one version. `answered`: an answers file's answers by command (kerasbench.answers),
    shown beside the commands of each change; `trust`: how far to trust a cell, a sentence per column scored against
    its long runs (trust_lines), under the count."""
    groups = main_axis(groups)
    pythons = other_pythons(groups)
    versions = sorted(groups, key=version_key)
    if len(versions) < 2:
        return ""
    pairs = sorted({p for g in groups.values() for p in g}, key=compare.pair_order)
    prev = previous_all(versions)
    rows, changes, floors, notes = [], [], {}, {}  # floors: each stamp's words -> its number on the page; notes:
    # the ids of the changes measured again -> what that says (confirmation, asked once per change: the cell, the count
    # and the list); all but SETTLED are drawn pale
    # a pair no version measured (the GPU strategies on a CPU machine, a loop a strategy does not apply to): named
    # under the map, not drawn as a row of n/a
    unmeasured = [pair for pair in pairs
                  if all((groups[v].get(pair, (None, None))[0] or {}).get("status") in (None, "skipped")
                         for v in versions)]
    pairs = [pair for pair in pairs if pair not in unmeasured]
    for loop, strategy in pairs:
        tds = []
        for v in versions:
            record = groups[v].get((loop, strategy), (None, None))[0]
            p = prev[v]
            prev_record = groups[p].get((loop, strategy), (None, None))[0] if p else None
            cid = f"atlas-change-{len(changes)}"
            td, marked = _cell(record, v, p, prev_record, cid, floors)
            note = confirmation(listed_commands(loop, strategy, p, v, pythons, answered, prev_record, record),
                                answered, prev_record, record, marked[0]) if marked and marked[0] != "other" else ""
            if note:
                notes[cid] = note
            if note and note != SETTLED:
                td = td.replace('tabindex="0">', 'tabindex="0" data-unconfirmed="1">', 1).replace(
                    "<ul class=\"more\">", f"<ul class=\"more\"><li>{esc(note)}</li>", 1)
            tds.append(td.replace("<td ", f'<td data-ver="{esc(v)}" ', 1))
            if marked:
                changes.append((cid, loop, strategy, p, v, marked[0], prev_record, record, marked[1]))
        rows.append(f'<tr data-loop="{esc(loop)}" data-strategy="{esc(strategy)}">'
                    f'<th class="pair">{esc(loop)} <span class="x">×</span> {esc(strategy)}</th>{"".join(tds)}</tr>')
    head = "".join(f'<th class="ver" data-ver="{esc(v)}">{esc(_split(v)[0])}'
                   + (f'<br><small>+{esc(_split(v)[1])}</small>' if _split(v)[1] else "")
                   + (f'<br><small class="keras">{esc(_keras(groups[v]))}</small>' if _keras(groups[v]) else "")
                   + (f'<br><small class="prev">vs {esc(prev[v])}</small>' if prev[v] else "") + "</th>"
                   for v in versions)
    loops = list(dict.fromkeys(lp for lp, _ in pairs))
    strategies = sorted({s for _, s in pairs}, key=lambda s: compare.pair_order(("", s)))
    options = "".join(f'<option value="{esc(x)}">{esc(x)}</option>' for x in loops)
    s_options = "".join(f'<option value="{esc(x)}">{esc(x)}</option>' for x in strategies)
    v_options = "".join(f'<option value="{esc(v)}" data-prev="{esc(prev[v] or "")}">{esc(v)}</option>'
                        for v in versions)
    counted = [c for c in changes if c[5] != "other"]
    answered_count = _answered_count(counted, answered, pythons, notes)
    pale = set(notes.values()) - {SETTLED}
    undecided = [c for c in changes if c[5] == "other"]
    items = "".join(_item(*c, answered, pythons, notes.get(c[0], "")) for c in counted)
    listing = (f'<ol class="changes">{items}</ol>' if counted
               else "<p>No pair changes between consecutive versions by compare's rule or its verdict.</p>")
    if undecided:
        listing += (f'<details class="undecided"><summary>{len(undecided)} flip{"" if len(undecided) == 1 else "s"} '
                    "of a verdict with a side undecided (◆): not counted as changes</summary>"
                    f'<ol class="changes">{"".join(_item(*c, answered, pythons) for c in undecided)}</ol></details>')
    return f"""<div id="atlas" class="atlas"><style>{CSS}</style>
<h2>Atlas: every pair across the TF versions</h2>
<p class="read">{esc(HOW_TO_READ)}</p>
<p class="count">{_count(pairs, versions, groups, changes)}</p>{_trust(trust)}
<div class="filters">Loop <select id="atlas-loop"><option value="">all</option>{options}</select>
Strategy <select id="atlas-strategy"><option value="">all</option>{s_options}</select>
TF <select id="atlas-tf" title="one version and the one it is read against"><option value="">all</option>
{v_options}</select>
<label><input type="checkbox" id="atlas-changed"> only rows with a change</label>
<label><input type="checkbox" id="atlas-undecided"> show the flips with a side undecided (◆, {len(undecided)})</label>
<span class="legend"><span class="key changed worse">▲</span> worse than the previous version
<span class="key changed better">▼</span> better (compare's rule on the RSS slope, else the verdict's flip)
{'<span class="key changed worse unconf">▲</span> pale, dashed: not confirmed or contested' if pale else ''}
<span class="key v-grows">grows</span> <span class="key v-flat">flat</span>
<span class="key v-inconclusive">inconclusive</span> the pair's verdict (RSS and heap together); then what grew; the
number is the RSS slope, KiB/iteration</span></div>
<div class="scroll"><table class="atlas"><thead><tr><th>loop × strategy \\ TF</th>{head}</tr></thead>
<tbody>{"".join(rows)}</tbody></table></div>{_floors_legend(floors)}{_unmeasured(unmeasured, groups, versions)}
<h3>What changed, and the commands that explain it ({len(counted)} in all){answered_count}</h3>
{listing}
<script>{JS}</script></div>
"""


TRUST_HEAD = ("<b>How far to trust a cell</b>: a column's cells scored as shown (their labels at their floors) "
              "against long runs of the same pairs (<code>kerasbench score atlas.json --reference FILE</code> lists "
              "every pair):")


def _trust(lines: Sequence[str]) -> str:
    if not lines:
        return ""
    return f'<div class="trust"><p>{TRUST_HEAD}</p><ul>{"".join(f"<li>{esc(x)}</li>" for x in lines)}</ul></div>'


def trust_lines(groups: compare.Groups, references: Sequence[str]) -> List[str]:
    """A sentence per reference file (score.brief): the atlas column of its release scored as shown against it. A
    folder stands for its .json files of the releases the atlas shows (the workflow's: a run measures the releases it
    was asked for). A UsageError naming a file that cannot be read, a file whose release no column is, or a folder
    with no .json file."""
    import glob

    from . import score

    cells = [(cell, path, v) for v, by_pair in groups.items() for cell, path in by_pair.values()]
    lines = []
    for path in references:
        if not os.path.isdir(path):
            lines.append(score.brief(*score.against(cells, path), path))
            continue
        files = sorted(glob.glob(os.path.join(path, "*.json")))
        if not files:
            raise UsageError(f"{path} is a folder with no .json file: give long runs of a release (a file, or a "
                             "folder of them: docs/reference/protocol8).")
        found = [(f, score.against(cells, f, absent_ok=True)) for f in files]
        lines += [score.brief(*scored, f) for f, scored in found if scored is not None]
    return lines


def counted_changes(groups: compare.Groups) -> List[Tuple[str, str, str, str]]:
    """(loop, strategy, previous version, version) of each change the list under the map counts (▲ or ▼; not a flip
    with a side undecided), in its order: by pair, then by version."""
    groups = main_axis(groups)
    versions = sorted(groups, key=version_key)
    prev = previous_all(versions)
    out = []
    for pair in sorted({p for g in groups.values() for p in g}, key=compare.pair_order):
        for v in versions:
            p = prev[v]
            marked = mark(groups[p].get(pair, (None, None))[0], groups[v].get(pair, (None, None))[0]) if p else None
            if marked and marked[0] != "other":
                out.append((*pair, p, v))
    return out


UNCONFIRMED = ("not confirmed: measured again by a command below, its two ends were not found different (alike, or "
               "too uncertain to tell); read the mark as the map's one measurement, not a change")
CONTESTED = ("contested: measured again by the commands below, one found its two ends alike and another found them "
             "different; the change sits at the edge of what one measurement decides")
SETTLED = ("settled: its answers disagreed, and its triage measured longer (the full profile: three repeats of up to "
           "a minute's loop at each end) found its two ends different, the same way: the mark holds")
REVERSED = ("not confirmed: its triage measured longer (the full profile) found its two ends different the other way; "
            "read the mark as the map's one measurement, not a change")
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
    from .questions import question_of

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
    from .asvconf import across_distributions

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
    from .questions import ends_verdict, unconfirmed

    if not answered:
        return ""
    flipped = verdict((before or {}).get("summary")) != verdict((after or {}).get("summary"))
    settled = [q for q in cmds if q.what == SETTLE_WHAT and ran_and_answered(q, answered)]
    if settled:
        entry = answered[settled[0].command]
        if unconfirmed(entry, flipped):
            return UNCONFIRMED
        found, expected = ends_verdict(entry), {"worse": "regressed", "better": "improved"}.get(moved)
        return CONTESTED if found is None or expected is None else SETTLED if found == expected else REVERSED
    alike = [unconfirmed(answered.get(q.command), flipped) for q in cmds]
    if not any(alike):
        return ""
    differ = any(not same and q.verb in ("triage", "attribute") and q.good and ran_and_answered(q, answered)
                 for q, same in zip(cmds, alike))
    return CONTESTED if differ else UNCONFIRMED


def ran_and_answered_entry(entry: Optional[dict]) -> bool:
    """Whether an answers file's entry ran (exit 0) and gave an answer with words."""
    from .questions import answered

    return answered(entry) and bool(entry["result"]["text"])


def ran_and_answered(q: Question, answered: Dict[str, dict]) -> bool:
    """Whether `q` ran (exit 0) and gave an answer in `answered` (an answers file's commands)."""
    return ran_and_answered_entry(answered.get(q.command))


def _answered_count(counted, answered: Optional[Dict[str, dict]], pythons: Optional[Dict[str, str]] = None,
                    notes: Optional[Dict[str, str]] = None) -> str:
    """The count after the list's heading: its commands run and answered, answered over a wider range, the changes
    `notes` (section's: change id -> confirmation) says are not confirmed, contested or settled, and the answers of
    changes no longer on the map."""
    if not answered:
        return ""
    said_again = list((notes or {}).values())
    alike = sum(note != SETTLED for note in said_again)  # drawn pale: not confirmed or contested
    contested, settled, reversed_ = (said_again.count(note) for note in (CONTESTED, SETTLED, REVERSED))
    listed = [listed_commands(c[1], c[2], c[3], c[4], pythons, answered, c[6], c[7])
              for c in counted]  # per change, once
    asked = {q.command for cmds in listed for q in cmds}
    ran = asked & set(answered)
    said = sum(ran_and_answered_entry(answered[cmd]) for cmd in ran)
    own = functools.partial(ran_and_answered, answered=answered)
    # a command answered for a change the map no longer has (a column measured since between its two ends: the
    # change is now steps between other columns) is kept in the file, not shown: said, not dropped in silence
    from .answers import FILE as FILE_NAME

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


def questions(groups: compare.Groups, only: Sequence[str] = (), answered: Optional[Dict[str, dict]] = None) -> list:
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
    from .questions import answered as is_answer

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


def _no_command_item(loop: str, strategy: str, p: str, v: str, pythons: Optional[Dict[str, str]]) -> str:
    why, runs = no_command(loop, strategy, p, v, pythons)
    return f'<li class="none">{esc(why)} ' + " and ".join(f'<code class="cmd">{esc(r)}</code>' for r in runs) + "</li>"


def _item(cid, loop, strategy, p, v, moved, before, after, why, answered: Optional[Dict[str, dict]] = None,
          pythons: Optional[Dict[str, str]] = None, alike: str = "") -> str:
    """One change of the list under the map: the pair, both sides, why it is marked, its picture, its commands (with
    each one's answer where `answered` has it); `alike`: UNCONFIRMED, CONTESTED or SETTLED (confirmation, asked by
    section)."""
    from .questions import shown

    b, a = before["summary"], after["summary"]
    def answer(q: Question) -> str:
        said = shown((answered or {}).get(q.command))
        if said:
            return f'<span class="answer">{linked(esc(no_paths(said)))}</span> '
        around = wider(q, answered)
        if around is None:
            return ""
        _, good, bad = _nightly_range(around[0])  # wider() found it a triage between two nightlies
        return (f'<span class="answer wider">over a wider range, nightly:{esc(good)} → nightly:{esc(bad)} '
                f'(a column measured since '
                f'splits it): {linked(esc(no_paths(shown(around[1]))))}</span> ')

    listed = listed_commands(loop, strategy, p, v, pythons, answered, before, after)
    cmds = (f'<li>{esc(BRANCH_CUT_NOTE)}</li>' if nightly_then_release(p, v) else "") + (
        "" if listed else _no_command_item(loop, strategy, p, v, pythons)) + "".join(
        f'<li>{esc(q.what)}: {answer(q)}<code class="cmd">{esc(q.command)}</code></li>' for q in listed)
    hw = compare.hardware_note(before, after)[1]
    return (f'<li id="{cid}" class="{moved}" data-loop="{esc(loop)}" data-strategy="{esc(strategy)}" '
            f'data-ver="{esc(v)}"><span class="glyph {moved}">{GLYPHS[moved]}</span> '
            f"<b>{esc(loop)} × {esc(strategy)}</b>, TF {esc(p)} → {esc(v)}: "
            f"{esc(verdict(b))}/{esc(b.get('growth_kind') or '-')} ({esc(kib(b.get('growth_per_iter')))} KiB/it) → "
            f"{esc(verdict(a))}/{esc(a.get('growth_kind') or '-')} ({esc(kib(a.get('growth_per_iter')))} KiB/it)"
            + (f' <span class="hw">different hardware ({esc(hw)}): measure both on one machine</span>' if hw else "")
            + f'<br><span class="why">{esc(why)}</span>'
            + (f'<br><span class="{"settled" if alike == SETTLED else "unconfirmed"}">{esc(alike)}</span>'
               if alike else "")
            + spark(before, after, p, v) + f'<ul class="cmds">{cmds}</ul></li>')


def page(paths: Sequence[str], groups: compare.Groups, answered: Optional[Dict[str, dict]] = None,
         trust: Sequence[str] = ()) -> str:
    """The atlas alone as one offline page (`kerasbench atlas`, `report --atlas`, publish)."""
    versions = sorted(groups, key=version_key)
    body = section(groups, answered, trust) or ("<p>The atlas needs records of at least two TF versions; these hold "
                               f"{esc(', '.join(versions)) or 'none'}.</p>")
    from . import public  # the public reports' table (claim against answer), where records measured one

    body += public.html(main_axis(groups))  # the map's column labels (2.16.2, not 2.16.2+py3.11)
    return frame(f"kerasbench atlas: TF {', '.join(versions)}", PAGE_CSS, f"""<h1>kerasbench atlas</h1>{body}
<p class="read">{made_from(paths)}; `kerasbench report`
on the same records without --atlas gives the full report (heat-tables, plots, curves).</p>""")


# ---------------------------------------------------------------- the atlas' own data (docs/atlas/atlas.json)
#
# What the page reads of each record and nothing more: its status and reason, the summary fields the cells and
# their details show, the hardware fingerprint and the packages of its environment, and for the two sides of a
# change the RSS series of their first repeat (decimated) that the change's picture draws. ~0.6 KiB a cell where
# the records are ~35 KiB (a column's environments and floors stamps kept once, cells naming theirs by index):
# the whole matrix's atlas is published with the project; the page made again from it is the page made from the
# records.

DATA_SCHEMA = "kerasbench-atlas"
DATA_VERSION = 2  # 2: a column's floors stamps once each, a cell's summary names its own by index (1 still reads)
READS = (1, 2)
# What a cell shows, and what a reader needs to see how it was judged: each series' slope and interval, the
# iterations each repeat measured (the floors' counts), the level of the test and where each repeat stopped.
SUMMARY_KEYS = ("verdict", "growth_kind", "growth_per_iter", "growth_ci_low", "growth_ci_high", "peak_loop",
                "peak_over_baseline", "heap_growth_per_iter", "heap_growth_ci_low", "heap_growth_ci_high",
                "heap_verdict", "repeats", "measured", "stopped", "alpha", "floor", "heap_floor", "why",
                "protocol", "floors_from") + TRACES
UNROUNDED = ("alpha",)  # not bytes: kept as it is
ENVIRONMENT_KEYS = ("machine_name", "tensorflow", "keras", "keras_package", "python", "numpy", "device",
                    "tf_distribution", "tf_git_version", "nightly") + FINGERPRINT_KEYS
SPARK_POINTS = 80  # a change's picture: at most this many readings per side


def _slim(value: Any) -> Any:
    """A summary figure as the page needs it: bytes to a tenth of a byte (the page shows tenths of a KiB); a text
    (a why, a floor's stamp) without a machine's folders (page.no_paths: the data is published)."""
    if isinstance(value, float):
        tenths = round(value, 1)
        return int(tenths) if tenths.is_integer() else tenths  # 4.96 -> 5, as 5.0 is: one spelling of a number
    if isinstance(value, str):
        return no_paths(value)
    if isinstance(value, dict):
        return {k: _slim(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_slim(v) for v in value]
    return value


def _slim_summary(summary) -> dict:
    """The SUMMARY_KEYS a summary has; an empty, NaN or infinite one is left out (the page shows n/a for it, as for
    a NaN: JSON has no NaN)."""
    s = summary or {}
    return {k: s[k] if k in UNROUNDED else _slim(s[k]) for k in SUMMARY_KEYS
            if s.get(k) not in (None, "") and not (isinstance(s[k], float) and not math.isfinite(s[k]))}


def _environment(record) -> dict:
    env = record.get("environment") or {}
    out = {k: env[k] for k in ENVIRONMENT_KEYS if env.get(k) is not None}
    if "machine_name" not in out and env.get("hostname"):
        out["machine_name"] = env["hostname"]
    return out


def rss_mib(record) -> Optional[Tuple[int, List[float]]]:
    """(every, readings): the first repeat's RSS after every `every`-th iteration (at most SPARK_POINTS of them),
    MiB over its first reading; None without a series of two readings. An atlas file's cell carries its own."""
    if record.get("rss_mib"):
        return int(record.get("rss_every") or 1), record["rss_mib"]
    for rep in record.get("repeats") or []:
        rss = ((rep.get("result") or {}).get("series") or {}).get("rss")
        if rss is not None and len(rss) >= 2 and all(finite(v) for v in rss):
            values = [float(v) for v in rss]
            every = max(1, math.ceil((len(values) - 1) / (SPARK_POINTS - 1)))
            return every, [round((v - values[0]) / MIB, 2) for v in values[::every]]
    return None


def data(groups: compare.Groups) -> dict:
    """The atlas data of grouped records: {schema, version, kerasbench, columns: [{version, cells: [...]}]}."""
    groups = main_axis(groups)
    versions = sorted(groups, key=version_key)
    changed, prev = set(), previous_all(versions)
    for v in versions:
        p = prev[v]
        for pair, (record, _) in groups[v].items():
            if p and mark(groups[p].get(pair, (None, None))[0], record):
                changed.update({(v, pair), (p, pair)})
    columns = []
    for v in versions:
        # a column's environments and floors stamps once each (a calibration's stamp is ~0.5 KiB, the same in most
        # of a column's cells: a quarter of the data when each cell kept its own); a cell names its own by index
        cells, environments, floors = [], [], []
        for (loop, strategy), (record, _) in sorted(groups[v].items(), key=lambda kv: compare.pair_order(kv[0])):
            env = _environment(record)
            if env not in environments:
                environments.append(env)
            summary = _slim_summary(record.get("summary"))
            stamp = summary.pop("floors_from", None)
            cell = {"loop": loop, "strategy": strategy, "status": record.get("status"), "summary": summary,
                    "env": environments.index(env)}
            if stamp is not None:
                if stamp not in floors:
                    floors.append(stamp)
                cell["floors"] = floors.index(stamp)
            if record.get("reason"):
                cell["reason"] = no_paths(record["reason"])  # published with the project: no machine's folders
            if (v, (loop, strategy)) in changed and (rss := rss_mib(record)):
                cell["rss_every"], cell["rss_mib"] = rss
            cells.append(cell)
        columns.append({"version": v, "environments": environments, "floors": floors, "cells": cells})
    judged = sorted({rule.version_of(c["summary"]) for col in columns for c in col["cells"]},
                    key=lambda v: -1 if v is None else v)
    return {"schema": DATA_SCHEMA, "version": DATA_VERSION, "kerasbench": __version__,
            "protocol": judged[0] if len(judged) == 1 else judged, "columns": columns}


def is_data(payload: Any) -> bool:
    return isinstance(payload, dict) and payload.get("schema") == DATA_SCHEMA


def groups_of(payload: Any, path: str) -> compare.Groups:
    """The groups (compare.group's shape) of an atlas data file; a one-line UsageError naming the file and what is
    wrong with it."""
    def bad(why):
        return UsageError(f"Not a usable kerasbench atlas file: {path}: {why}.")

    if payload.get("version") not in READS:
        raise bad(f"version {payload.get('version')!r}, this kerasbench reads version "
                  f"{' and '.join(map(str, READS))}")
    columns = payload.get("columns")
    if not isinstance(columns, list):
        raise bad("no 'columns' list")
    groups: compare.Groups = {}
    for i, column in enumerate(columns):
        if not (isinstance(column, dict) and isinstance(column.get("version"), str)
                and isinstance(column.get("cells"), list) and isinstance(column.get("environments"), list)
                and all(isinstance(e, dict) for e in column["environments"])):
            raise bad(f"columns[{i}] is not an object with a 'version' string, an 'environments' list of objects "
                      "and a 'cells' list")
        if column["version"] in groups:
            raise bad(f"columns[{i}]: TF {column['version']} twice")
        stamps = column.get("floors", [])
        if not (isinstance(stamps, list) and all(isinstance(s, dict) for s in stamps)):
            raise bad(f"columns[{i}].floors is not a list of objects (the floors stamps its cells name)")
        for k, environment in enumerate(column["environments"]):
            problem = environment_problem(environment, f"columns[{i}].environments[{k}]")
            if problem:
                raise bad(problem)
        cells = groups.setdefault(column["version"], {})
        for j, given in enumerate(column["cells"]):
            where = f"columns[{i}].cells[{j}]"
            if not (isinstance(given, dict) and isinstance(given.get("loop"), str)
                    and isinstance(given.get("strategy"), str)):
                raise bad(f"{where} has no 'loop' and 'strategy' strings")
            if not isinstance(given.get("summary", {}), dict):
                raise bad(f"{where}.summary is not an object")
            env = given.get("env")
            if not (isinstance(env, int) and not isinstance(env, bool) and 0 <= env < len(column["environments"])):
                raise bad(f"{where}.env is not the index of one of the column's {len(column['environments'])} "
                          "environments")
            if "floors" in given:  # version 2: the summary's floors_from, kept once in the column
                k = given["floors"]
                if not (isinstance(k, int) and not isinstance(k, bool) and 0 <= k < len(stamps)):
                    raise bad(f"{where}.floors is not the index of one of the column's {len(stamps)} floors stamps")
                given = dict(given, summary=dict(given.get("summary", {}), floors_from=stamps[k]))
                given.pop("floors")
            problem = cell_problem(given, where)
            if problem:
                raise bad(problem)
            cell = dict(given, environment=column["environments"][env])
            rss = cell.get("rss_mib")
            if rss is not None and not (isinstance(rss, list) and all(finite(v) for v in rss)):
                raise bad(f"{where}.rss_mib is not a list of numbers")
            every = cell.get("rss_every", 1)
            if not (isinstance(every, int) and not isinstance(every, bool) and every >= 1):
                raise bad(f"{where}.rss_every is not a whole number of at least 1")
            if (cell["loop"], cell["strategy"]) in cells:  # data() writes each pair once
                raise bad(f"{where}: {cell['loop']} × {cell['strategy']} twice for TF {column['version']}")
            cells[(cell["loop"], cell["strategy"])] = (cell, path)
    return groups


def cell_problem(cell: dict, where: str) -> Optional[str]:
    """What is wrong with the types of what the page reads of an atlas file's cell (its status, reason and summary),
    in words ('columns[0].cells[1].summary.floor is a string, expected number'); None when every value has its type.
    The record's JSON Schema is the one rule (record.type_problem, the records' check); a cell whose values are all
    of the plain types the schema names passes without it (_plain: an atlas of 3000 columns is 60,000 cells)."""
    from .record import type_problem

    summary = cell.get("summary", {})
    if _plain(cell.get("status"), ("string",)) and _plain(cell.get("reason"), ("string", "null")) and \
            all(_plain(v, _KINDS["summary"].get(k, ())) for k, v in summary.items()):
        return None
    return type_problem({k: cell[k] for k in ("status", "reason", "summary") if k in cell}, where)


def environment_problem(environment: dict, where: str) -> Optional[str]:
    """cell_problem's check of a column's environment (where: 'columns[0].environments[0]'); None when fine."""
    from .record import type_problem

    if all(_plain(v, _KINDS["environment"].get(k, ())) for k, v in environment.items()):
        return None
    problem = type_problem({"environment": environment}, "")
    return where + problem[len(".environment"):] if problem else None


def _plain(value: Any, kinds: Sequence[str]) -> bool:
    """Whether `value` is plainly of one of `kinds` (JSON types; 'enum:<values>' for a text of those; 'stamps' for an
    open object of objects of scalars, or nulls): True only for what it can tell; anything else goes to the schema's
    check."""
    for kind in kinds:
        if kind.startswith("enum:"):
            if isinstance(value, str) and value in kind[5:].split("|"):
                return True
        elif kind == "stamps" and isinstance(value, dict) and all(
                v is None or isinstance(v, dict) and all(isinstance(x, SCALARS) for x in v.values())
                for v in value.values()):
            return True
        elif kind == "null" and value is None or kind == "string" and isinstance(value, str) \
                or kind == "integer" and type(value) is int or kind == "number" and type(value) in (int, float):
            return True
    return False


def _kinds_of(schema: dict) -> Tuple[str, ...]:
    """The plain kinds a property's schema allows (type, a list of types, an enum, anyOf of those); () for others."""
    if "anyOf" in schema:
        return tuple(k for part in schema["anyOf"] for k in _kinds_of(part))
    if "enum" in schema and all(isinstance(v, str) for v in schema["enum"]):
        return ("enum:" + "|".join(schema["enum"]),)
    kinds = schema.get("type")
    if kinds == "object" and "properties" not in schema:  # floors_from: {series: its stamp (an object) or null}
        return ("stamps",)
    kinds = [kinds] if isinstance(kinds, str) else kinds or []
    return tuple(k for k in kinds if k in ("null", "string", "integer", "number"))


class _Kinds(dict):
    """{'summary' / 'environment': {key: plain kinds}} from the record's JSON Schema, read on first use."""

    def __missing__(self, part):
        from .record import json_schema

        defs = json_schema()["$defs"]
        props = defs["Summary" if part == "summary" else "Environment"]
        props = props.get("properties") or {k: v for p in props.get("allOf", []) for k, v in
                                            (p.get("properties") or {}).items()}
        self[part] = {k: _kinds_of(v) for k, v in props.items()}
        return self[part]


_KINDS = _Kinds()
SCALARS = (str, int, float, type(None))


def load(paths: Sequence[str], rejudge: bool = False) -> compare.Groups:
    """Grouped records of `paths` (compare's inputs and checks; `rejudge`: compare.group's), or the groups of one
    atlas data file (one protocol, or refused: its cells keep no series to judge again), with the cells of any
    records beside it put into its columns (merge)."""
    return merge(paths, rejudge)[0]


def merge(paths: Sequence[str], rejudge: bool = False) -> Tuple[compare.Groups, Dict[str, int]]:
    """(the groups of `paths`, what the records added): `paths` are records, or one atlas data file and records to
    add to it. Each record's cell goes into its column, a new column where the atlas has none, and replaces the
    atlas' cell of the same pair there (the atlas keeps the cells of the records that made it, not the records:
    cells are added to it, it is not made again). The checks are the atlas' as if every cell were a record: a
    column judged by one protocol, traced with untraced and two bodies for one pair refused. The counts: {"added",
    "replaced", "columns"} (all 0 without an atlas file)."""
    counts = {"added": 0, "replaced": 0, "columns": 0}
    found = {p: _data_in(p) for p in paths if p.endswith(".json")}  # each file read once here
    atlases = [p for p in paths if found.get(p) is not None]
    if not atlases:
        return compare.group(compare.load(paths), rejudge), counts
    if len(atlases) > 1:
        raise UsageError(f"Two atlas files (kerasbench-atlas): {atlases[0]} and {atlases[1]}; give one, and the "
                         "records whose cells go into it.")
    base = atlases[0]
    groups = groups_of(found[base], base)
    records = [p for p in paths if p != base]
    if records:
        if rejudge:
            raise UsageError(f"--rejudge judges records again from their series; {base}'s cells keep none: add "
                             "records of this protocol to it, or make the atlas again from all the records.")
        added = group_columns(compare.load(records))
        counts["columns"] = len(added)
        for version, cells in added.items():
            column = groups.setdefault(version, {})
            had, new = _protocols(column.values()), _protocols(cells.values())
            if had and new and had != new:  # each side one protocol (groups_of's and group_columns' checks)
                path = next(iter(cells.values()))[1]
                raise UsageError(f"{path} was judged by {rule.version_text(new.pop())}, the column TF {version} of "
                                 f"{base} by {rule.version_text(had.pop())}: a column is judged by one protocol; "
                                 "measure it again with this kerasbench, or make the atlas again from all its records "
                                 "with --rejudge.")
            for pair, cell in cells.items():
                counts["replaced" if pair in column else "added"] += 1
                column[pair] = cell
    group_columns([(cell, path, v) for v, cells in groups.items() for cell, path in cells.values()], rejudge)
    return groups, counts


def _protocols(cells) -> set:
    """The protocols (rule.version_of) that judged the measured ones of (record or cell, path) `cells`."""
    return {rule.version_of(cell.get("summary")) for cell, _ in cells if cell.get("status", "ok") == "ok"}


def group_columns(loaded, rejudge: bool = False):
    """compare.group of `loaded`, a column's protocol at a time: each column (version) is one rule's, as compare
    asks, but two columns may be two rules' (a nightly measured before a protocol change keeps its verdicts and its
    stamps: the page says which columns each judged). `rejudge`: every record judged again by this protocol first,
    one rule for all (compare.group's). Traced with untraced and two bodies for one pair are refused across columns
    too."""
    from .trace import traced

    if rejudge:
        return compare.group(loaded, rejudge=True)
    columns: dict = {}
    for item in loaded:
        columns.setdefault(item[2], []).append(item)
    by_rule: dict = {}
    for items in columns.values():
        by_rule.setdefault(rule.one_version((record, path) for record, path, _ in items), []).extend(items)
    groups: dict = {}
    for items in by_rule.values():
        groups.update(compare.group(items))
    kinds = {traced(record): path for column in groups.values() for record, path in column.values()}
    if len(kinds) > 1:
        raise UsageError(f"Traced and untraced records: {kinds[True]} was measured with `run --trace`, {kinds[False]} "
                         "without; a trace moves the memory figures: an atlas of traced or of untraced records.")
    compare._one_body(groups)
    return groups


def holds_data(path: str) -> bool:
    return _data_in(path) is not None


def _data_in(path: str) -> Optional[dict]:
    """The atlas data file at `path` (kerasbench-atlas), read; None when `path` is not one (records, a folder)."""
    from .files import DATA_LIMIT, read_json

    try:
        data = read_json(path, "atlas file", limit=DATA_LIMIT) if os.path.isfile(path) else None
    except UsageError:
        return None
    return data if data is not None and is_data(data) else None


HOW_TO_READ = (
    "A row per loop shape × cleanup strategy, a column per TF version (a release with tf_keras or on another Python "
    "is a column of its own). Each cell: the pair's one verdict, RSS and heap together (grows when either grows, flat "
    "when both are flat, else inconclusive), what grew (leak: the heap grows; retention: the allocator keeps pages; "
    "flat) and the RSS slope in KiB/iteration. Hover or click a cell for the RSS and heap verdicts it comes from, "
    "the peak, the heap slope and the trace counts. A thick left border and ▲ (worse) / ▼ (better) mark a cell "
    "that changed from the previous version of its axis (named under each column): compare's rule on the RSS slope "
    "(regressed or improved: the slopes' CIs apart by more than the floor), else a flip of its verdict or what grew; "
    "a flip with a side undecided (◆) is not counted as a change and is shown on demand. The list below "
    "the map gives, per change, the commands that find the release (triage), the package (attribute) and the "
    "cleanup steps (ablate) behind it. The TF select shows one version beside the one it is read against; the "
    "page's address keeps the filters, a link to the view. n/a: not measured or does not apply; failed: the worker "
    "failed."
)

PAGE_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#111;max-width:1500px}
h1{margin:0 0 .3em}h2{border-bottom:1px solid #ccc;margin-top:1.2em}.read{max-width:70em;color:#333}
"""

CSS = """
.atlas .filters{margin:.4em 0 .8em;display:flex;flex-wrap:wrap;gap:.4em 1em;align-items:center}
.atlas .legend{color:#333;font-size:12px}.atlas .key{display:inline-block;padding:0 4px;border-radius:3px}
.atlas .scroll{overflow:visible}
table.atlas{border-collapse:separate;border-spacing:0;margin:0 0 1em;border-top:1px solid #ddd;
border-left:1px solid #ddd}
table.atlas th,table.atlas td{border:0 solid #ddd;border-width:0 1px 1px 0;padding:3px 6px;white-space:nowrap;
vertical-align:top}
table.atlas th.pair{text-align:left;font-weight:500}table.atlas th.pair .x{color:#999}
table.atlas th.ver{font-weight:600;text-align:center}table.atlas th.ver small{font-weight:400;color:#666}
.atlas .count{font-weight:600}
.atlas .trust{font-size:.92em}.atlas .trust p{margin:.2em 0}.atlas .trust ul{margin:.2em 0 .6em 1.2em;padding:0}
table.atlas td{min-width:7.5em;cursor:pointer;position:relative}
table.atlas td.na{color:#888;text-align:center;cursor:default}table.atlas td.failed{background:#fbe3e3;color:#900}
.atlas .verdict{font-weight:600;margin-right:4px}.atlas .kind{font-size:11px;color:#444;margin-right:4px}
.atlas .kind.k-leak{color:#a00;font-weight:700}.atlas .kind.k-retention{color:#a60}
.atlas .slope{display:block;font-size:11px;color:#333;font-variant-numeric:tabular-nums}
.atlas .v-grows{background:#fde0dc}.atlas .v-flat{background:#e3f4e1}.atlas .v-inconclusive{background:#f1f1f1}
.atlas .changed{border-left:5px solid #222}.atlas td.changed.worse,.atlas .key.worse{border-left-color:#c00}
.atlas td.changed.better,.atlas .key.better{border-left-color:#070}
.atlas .glyph{font-weight:700;margin-right:3px}.atlas .worse>.glyph,.atlas .glyph.worse{color:#c00}
.atlas .better>.glyph,.atlas .glyph.better{color:#070}.atlas .other>.glyph,.atlas .glyph.other{color:#333}
.atlas .key.changed{border-left-width:5px;border-left-style:solid;padding-left:3px}
.atlas td[data-unconfirmed]{border-left-style:dashed}.atlas td[data-unconfirmed]>.glyph{opacity:.45}
.atlas .key.unconf{border-left-style:dashed;color:rgba(204,0,0,.45)}
.atlas .unconfirmed{color:#735;font-style:italic}
.atlas .settled{color:#355;font-style:italic}
.atlas ul.more{display:none;margin:4px 0 0;padding-left:1.1em;font-size:11px;white-space:normal;width:22em}
.atlas td:hover>ul.more,.atlas td:focus>ul.more{display:block;position:absolute;left:0;top:100%;z-index:10;
margin:0;padding:4px 8px 4px 1.6em;background:#fffef3;border:1px solid #bbb;box-shadow:0 2px 6px rgba(0,0,0,.2)}
.atlas td.open>ul.more{display:block;position:static;margin:4px 0 0;padding:0 0 0 1.1em;background:none;border:0;
box-shadow:none}
.atlas ol.changes li{margin:.3em 0}.atlas ul.cmds{margin:.2em 0;padding-left:1.2em;font-size:12px}
.atlas code.cmd{background:#f4f4f4;border:1px solid #ddd;border-radius:3px;padding:0 4px;user-select:all}
.atlas .answer{font-weight:600;margin-right:.4em}
.atlas .hw{color:#a33;font-size:12px}.atlas svg.spark{display:block;margin:.3em 0 0 1.4em}
.atlas tr.hidden,.atlas li.hidden,.atlas .colhide{display:none}
.atlas td.undecided>.glyph{display:none}.atlas.show-undecided td.undecided{border-left:5px solid #777}
.atlas.show-undecided td.undecided>.glyph{display:inline}.atlas .why{font-size:12px;color:#555}
.atlas details.undecided{margin:.6em 0}.atlas details.undecided>summary{cursor:pointer;color:#333}
table.atlas thead th{position:sticky;top:0;z-index:3;background:#fff;border-bottom-color:#999}
table.atlas th.pair{position:sticky;left:0;z-index:2;background:#fff;border-right-color:#999}
table.atlas thead th:first-child{left:0;z-index:4;border-right-color:#999}
"""

JS = """
(function () {
  var root = document.getElementById('atlas');
  var loop = document.getElementById('atlas-loop'), strategy = document.getElementById('atlas-strategy');
  var tf = document.getElementById('atlas-tf'), only = document.getElementById('atlas-changed');
  var undecided = document.getElementById('atlas-undecided'), details = root.querySelector('details.undecided');
  function marked() {  // the cells "only rows with a change" looks for: the changes, and on demand the ◆ flips
    var at = tf.value ? '[data-ver="' + CSS.escape(tf.value) + '"]' : '';
    return 'td.changed' + at + (undecided.checked ? ', td.undecided' + at : '');
  }
  function apply() {
    var keep = tf.value ? [tf.value, tf.options[tf.selectedIndex].dataset.prev] : null;
    root.classList.toggle('show-undecided', undecided.checked);
    if (details && undecided.checked) { details.open = true; }
    root.querySelectorAll('tr[data-loop], ol.changes > li').forEach(function (el) {
      var show = (!loop.value || el.dataset.loop === loop.value) &&
        (!strategy.value || el.dataset.strategy === strategy.value) &&
        (el.tagName !== 'LI' || !tf.value || el.dataset.ver === tf.value) &&
        (!only.checked || el.tagName !== 'TR' || el.querySelector(marked()) !== null);
      el.classList.toggle('hidden', !show);
    });
    root.querySelectorAll('table.atlas [data-ver]').forEach(function (el) {
      el.classList.toggle('colhide', keep !== null && keep.indexOf(el.dataset.ver) < 0);
    });
    var state = [['loop', loop.value], ['strategy', strategy.value], ['tf', tf.value],
                 ['changed', only.checked ? '1' : ''],
                 ['undecided', undecided.checked ? '1' : '']].filter(function (kv) { return kv[1]; })
      .map(function (kv) { return kv[0] + '=' + encodeURIComponent(kv[1]); }).join('&');
    try { history.replaceState(null, '', state ? '#' + state : location.pathname + location.search); } catch (e) {}
  }
  function fromHash() {  // a link to a view: #loop=sweep&strategy=reuse_model&tf=2.17.1&changed=1
    var q = new URLSearchParams(location.hash.slice(1));
    [[loop, 'loop'], [strategy, 'strategy'], [tf, 'tf']].forEach(function (pair) {
      var v = q.get(pair[1]);
      if (v !== null && Array.prototype.some.call(pair[0].options, function (o) { return o.value === v; })) {
        pair[0].value = v;
      }
    });
    only.checked = q.get('changed') === '1';
    undecided.checked = q.get('undecided') === '1';
    apply();
  }
  [loop, strategy, tf, only, undecided].forEach(function (c) { c.addEventListener('change', apply); });
  window.addEventListener('hashchange', fromHash);
  root.querySelectorAll('table.atlas td[tabindex]').forEach(function (td) {
    function toggle() { td.classList.toggle('open'); }
    td.addEventListener('click', function (e) { if (e.target.tagName !== 'A') { toggle(); } });
    td.addEventListener('keydown', function (e) {
      if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); toggle(); }
    });
  });
  if (location.hash.length > 1) { fromHash(); }
})();
"""


def data_text(payload: dict) -> str:
    """The atlas data as JSON with a cell a line (a new run's diff reads cell by cell)."""
    columns = []
    for column in payload["columns"]:
        cells = ",\n".join(json.dumps(cell, separators=(",", ":"), allow_nan=False) for cell in column["cells"])
        columns.append(f'{{"version":{json.dumps(column["version"])},'
                       f'"environments":{json.dumps(column["environments"], separators=(",", ":"))},'
                       f'"floors":{json.dumps(column.get("floors", []), separators=(",", ":"))},'
                       f'"cells":[\n{cells}]}}')
    head = {k: v for k, v in payload.items() if k != "columns"}
    return json.dumps(head, separators=(",", ":"))[:-1] + ',"columns":[\n' + ",\n".join(columns) + "]}\n"


PAGE, DATA = "index.html", "atlas.json"


def write(paths: Sequence[str], folder: str, groups: Optional[compare.Groups] = None, rejudge: bool = False,
          page_name: str = PAGE, with_data: bool = True, trust: Sequence[str] = ()) -> List[str]:
    """The one writer of the atlas (`kerasbench atlas`, `report --atlas`, publish): the atlas of `paths` (records, or
    one atlas data file and records to add to it; `groups`: already loaded from them, else loaded here with
    `rejudge`) into `folder`, made if missing: the page (PAGE, or `page_name`: `report --atlas --output FILE`) and,
    `with_data`, DATA, each atomically.
    The inputs' errors come first, then the outputs' (a folder that is a file; an output that is an input; a folder
    made for outputs then refused is removed again); DATA is not written again when it is the only input (the page is
    made again from it), and written in place, atomically, when records beside it add cells. `trust`: the lines
    trust_lines made of long runs (docs/reference/), said under the map. Returns the paths written, the page last."""
    from . import answers, files, floors

    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise UsageError(f"Cannot write the atlas to {folder}: it is not a folder; give a folder (made if missing).")
    groups = load(paths, rejudge) if groups is None else groups  # the inputs' errors: nothing made for them
    outputs = {"the atlas page": os.path.join(folder, page_name)}
    own = own_data(paths, folder)
    if with_data and not (own and len(paths) == 1):
        outputs["the atlas data"] = os.path.join(folder, DATA)
    made = not os.path.isdir(folder)
    files.make_folder(folder, "the atlas")  # check_outputs checks files in existing folders
    try:  # FOLDER/atlas.json with records beside it: written again, their cells added (its own input, atomically)
        files.check_outputs(outputs, {"PATH": [p for p in paths if p != own]}, floors.folders())
    except UsageError:
        if made:  # refused: no empty folder left behind (inside an input records folder, say)
            os.rmdir(folder)
        raise
    answered = answers.read(os.path.join(folder, answers.FILE))["answers"]  # the changes' answers, when run
    text = page(paths, groups, answered, trust)
    payload = data_text(data(groups)) if "the atlas data" in outputs else None
    written = []
    if payload is not None:
        written.append(files.write_text(outputs["the atlas data"], payload, "the atlas data"))
    written.append(files.write_text(outputs["the atlas page"], text, "the atlas"))
    return written


def own_data(paths: Sequence[str], folder: str) -> Optional[str]:
    """The one of `paths` that is `folder`'s own DATA (the atlas made again, or added to, where it is), else None."""
    own = os.path.join(folder, DATA)
    if os.path.islink(own) or not os.path.isfile(own):  # a link there is another file: never written through
        return None
    return next((p for p in paths if os.path.isfile(p) and os.path.samefile(p, own)), None)

