"""The atlas page: the map's cells, the list of changes with their commands and answers, the trust lines;
its CSS and JavaScript are files beside this module (assets/).
"""

from __future__ import annotations

import collections
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import draw, rule
from ..compare.cells import Groups, hardware_note, pair_order
from ..questions import Question
from ..releases import version_key
from ..rule import DEFAULT_FLOOR
from ..page import esc, finite, frame, kib, linked, made_from, mib, no_paths
from ..units import KIB, MIB, floor_kib
from .changes import (BRANCH_CUT_NOTE, SOLID, _nightly_range, answered_count, listed_commands, mark_kind, mark_note,
                      no_command, wider)
from .data import _slim, _slim_summary, rss_mib
from .trust import trust_html
from .model import (GLYPHS, TRACES, _keras, _split, main_axis, mark, nightly_then_release, other_pythons, previous_all,
                    verdict, verdicts_text)


def _asset(name: str) -> str:
    """A file of assets/ (the page's CSS and JavaScript), as text: package data, read once at import."""
    from importlib import resources

    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


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
        hardware = hardware_note(prev_record, record)[1]
        if hardware:
            tip.insert(2, f"different hardware ({hardware}): the change may be the machine's")
        glyph = f'<span class="glyph">{GLYPHS[moved]}</span>'
        cls += f" changed {moved}" if moved != "other" else " undecided other"
    more = "".join(f"<li>{esc(line)}</li>" for line in tip)
    if moved:
        more += f'<li><a href="#{cid}">commands for this change ↓</a></li>'
    kind_html = f'<span class="kind k-{esc(kind)}">{esc(kind)}</span>' if kind else ""
    shade = f' style="{shade_of(s.get("growth_per_iter"))}"' if shown == "grows" else ""
    return (f'<td class="{esc(cls)}"{shade} tabindex="0">{glyph}'
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


def _count(pairs, versions, groups: Groups, changes) -> str:
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


def _unmeasured(pairs, groups: Groups, versions) -> str:
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


def section(groups: Groups, answered: Optional[Dict[str, dict]] = None, trust: Sequence[str] = ()) -> str:
    """The atlas as a <div id="atlas"> (its own style and script inline; not a <section>: those are the loop
    shapes'); '' for records of one version. `answered`: an answers file's answers by command (kerasbench.answers),
    shown beside the commands of each change; `trust`: how far to trust a cell, a sentence per column scored against
    its long runs (trust_lines), under the count."""
    groups = main_axis(groups)
    pythons = other_pythons(groups)
    versions = sorted(groups, key=version_key)
    if len(versions) < 2:
        return ""
    pairs = sorted({p for g in groups.values() for p in g}, key=pair_order)
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
            note = mark_note(listed_commands(loop, strategy, p, v, pythons, answered, prev_record, record),
                             answered, prev_record, record, marked[0]) if marked and marked[0] != "other" else ""
            if note:
                notes[cid] = note
            if note and mark_kind(note) not in SOLID:
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
    strategies = sorted({s for _, s in pairs}, key=lambda s: pair_order(("", s)))
    options = "".join(f'<option value="{esc(x)}">{esc(x)}</option>' for x in loops)
    s_options = "".join(f'<option value="{esc(x)}">{esc(x)}</option>' for x in strategies)
    v_options = "".join(f'<option value="{esc(v)}" data-prev="{esc(prev[v] or "")}">{esc(v)}</option>'
                        for v in versions)
    counted = [c for c in changes if c[5] != "other"]
    count_line = answered_count(counted, answered, pythons, notes)
    pale = {n for n in notes.values() if mark_kind(n) not in SOLID}
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
<p class="count">{_count(pairs, versions, groups, changes)}</p>{_kinds(notes)}{trust_html(trust)}
<div class="filters">Loop <select id="atlas-loop"><option value="">all</option>{options}</select>
Strategy <select id="atlas-strategy"><option value="">all</option>{s_options}</select>
TF <select id="atlas-tf" title="one version and the one it is read against"><option value="">all</option>
{v_options}</select>
<label><input type="checkbox" id="atlas-changed"> only rows with a change</label>
<label><input type="checkbox" id="atlas-undecided"> show the flips with a side undecided (◆, {len(undecided)})</label>
<span class="legend"><span class="key changed worse">▲</span> worse than the previous version
<span class="key changed better">▼</span> better (compare's rule on the RSS slope, else the verdict's flip)
{'<span class="key changed worse unconf">▲</span> pale, dashed: not confirmed, contested, never measured again or '
 'across machines (each says why)' if pale else ''}
<span class="key v-grows">grows</span> <span class="key v-flat">flat</span>
<span class="key v-inconclusive">inconclusive</span> the pair's verdict (RSS and heap together); then what grew; the
number is the RSS slope, KiB/iteration; a growing cell's red deepens with it (log scale, KiB/it): {_shade_legend()}
</span></div>
<div class="scroll"><table class="atlas"><thead><tr><th>loop × strategy \\ TF</th>{head}</tr></thead>
<tbody>{"".join(rows)}</tbody></table></div>{_floors_legend(floors)}{_unmeasured(unmeasured, groups, versions)}
<h3>What changed, and the commands that explain it ({len(counted)} in all){count_line}</h3>
{listing}
<script>{JS}</script></div>
"""


# A growing cell's colour says how much grows: a log scale of its RSS slope, one for every column (so two columns'
# reds compare), from SHADE_LOW (the palest) to SHADE_HIGH and over (the deepest), as the report's heat tables.
SHADE_LOW, SHADE_HIGH = 8 * KIB, 16 * MIB


def shade_of(slope: Any) -> str:
    """The inline background of a growing cell with RSS slope `slope` (bytes/iteration)."""
    value = float(slope) if finite(slope) else SHADE_LOW
    t = min(1.0, max(0.0, math.log10(max(value, SHADE_LOW) / SHADE_LOW) / math.log10(SHADE_HIGH / SHADE_LOW)))
    light = 93 - 45 * t
    return f"background:hsl(8,75%,{light:.0f}%);color:{'#fff' if light < 62 else '#111'}"


def _shade_legend() -> str:
    steps = (SHADE_LOW, 128 * KIB, 2 * MIB, SHADE_HIGH)
    return "".join(f'<span class="key" style="{shade_of(v)}">{esc(kib(v))}</span>' for v in steps)


KINDS = ("confirmed", "settled", "not confirmed", "contested", "never measured again", "across machines")


def _kinds(notes: Dict[str, str]) -> str:
    """The first screen's count of the marks by kind: solid only when measuring both ends again confirmed them."""
    if not notes:
        return ""
    counts = collections.Counter(mark_kind(n) for n in notes.values())
    solid = sum(counts[k] for k in SOLID)
    parts = ", ".join(f"{counts[k]} {k}" for k in KINDS if counts[k])
    return (f'<p class="count kinds">Marks by what measuring them again said: {parts}. Solid: {solid} '
            f'(both ends measured again on one machine and found different); pale: {len(notes) - solid}, each '
            "saying why.</p>")


def _no_command_item(loop: str, strategy: str, p: str, v: str, pythons: Optional[Dict[str, str]]) -> str:
    why, runs = no_command(loop, strategy, p, v, pythons)
    return f'<li class="none">{esc(why)} ' + " and ".join(f'<code class="cmd">{esc(r)}</code>' for r in runs) + "</li>"


def _item(cid, loop, strategy, p, v, moved, before, after, why, answered: Optional[Dict[str, dict]] = None,
          pythons: Optional[Dict[str, str]] = None, alike: str = "") -> str:
    """One change of the list under the map: the pair, both sides, why it is marked, its picture, its commands (with
    each one's answer where `answered` has it); `alike`: UNCONFIRMED, CONTESTED or SETTLED (confirmation, asked by
    section)."""
    from ..questions import shown

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
    hw = hardware_note(before, after)[1]
    return (f'<li id="{cid}" class="{moved}" data-loop="{esc(loop)}" data-strategy="{esc(strategy)}" '
            f'data-ver="{esc(v)}"><span class="glyph {moved}">{GLYPHS[moved]}</span> '
            f"<b>{esc(loop)} × {esc(strategy)}</b>, TF {esc(p)} → {esc(v)}: "
            f"{esc(verdict(b))}/{esc(b.get('growth_kind') or '-')} ({esc(kib(b.get('growth_per_iter')))} KiB/it) → "
            f"{esc(verdict(a))}/{esc(a.get('growth_kind') or '-')} ({esc(kib(a.get('growth_per_iter')))} KiB/it)"
            + (f' <span class="hw">different hardware ({esc(hw)}): measure both on one machine</span>' if hw else "")
            + f'<br><span class="why">{esc(why)}</span>'
            + (f'<br><span class="{"settled" if mark_kind(alike) in SOLID else "unconfirmed"}">{esc(alike)}</span>'
               if alike else "")
            + spark(before, after, p, v) + f'<ul class="cmds">{cmds}</ul></li>')


def page(paths: Sequence[str], groups: Groups, answered: Optional[Dict[str, dict]] = None,
         trust: Sequence[str] = ()) -> str:
    """The atlas alone as one offline page (`kerasbench atlas`, `report --atlas`, publish)."""
    versions = sorted(groups, key=version_key)
    body = section(groups, answered, trust) or ("<p>The atlas needs records of at least two TF versions; these hold "
                               f"{esc(', '.join(versions)) or 'none'}.</p>")
    from .. import public  # the public reports' table (claim against answer), where records measured one

    body += public.html(main_axis(groups))  # the map's column labels (2.16.2, not 2.16.2+py3.11)
    return frame(f"kerasbench atlas: TF {', '.join(versions)}", PAGE_CSS, f"""<h1>kerasbench atlas</h1>{body}
<p class="read">{made_from(paths)}; `kerasbench report`
on the same records without --atlas gives the full report (heat-tables, plots, curves).</p>""")


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

PAGE_CSS = _asset("page.css")

CSS = _asset("atlas.css")

JS = _asset("atlas.js")
