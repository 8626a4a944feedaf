"""The atlas of `kerasbench report`: every (loop, strategy) pair against every TF version on one map.

A row per loop × strategy, a column per version as `compare` groups the records (compare.load / compare.group: a
release with tf_keras, another Python or another side is a column of its own, `2.16.2+tf_keras`), in
releases.version_key order. Each cell is the pair's RSS verdict (summary `verdict`), what grew (`growth_kind`,
stats.growth_kind) and its slope (`growth_per_iter`, KiB/iteration); its tooltip and a click add the peak, the
heap slope and verdict, and the trace counts. A cell whose verdict or what-grew differs from the previous column
of its axis (the previous release with the same label; a labelled column's first falls back to the plain releases)
is marked: a thick left border and ▲ (worse), ▼ (better) or ◆ (different: a side undecided), and below the map the
commands that bisect (triage), attribute and ablate that change, with only the options those commands have.
Two selects filter the rows by loop and strategy. Everything is inline (no network); every string from a record
goes through esc (report.esc's rule).
"""

from __future__ import annotations

import datetime
import html
import math
import re
from typing import Any, List, Optional, Sequence, Tuple

from . import __version__, compare
from .releases import version_key
from .units import KIB, MIB

# Worse and better are claims: only between decided readings (an `inconclusive` side, or a settling or step, is
# a different reading, not a better or a worse one: 2.21.0's notebook × reuse_model is not "better" for being
# undecided where 2.12.1 grows).
VERDICT_RANK = {"flat": 0, "grows": 1}
KIND_RANK = {"flat": 0, "retention": 1, "leak": 2}
GLYPHS = {"worse": "▲", "better": "▼", "other": "◆"}
TRACES = ("train_path_traces", "predict_path_traces", "all_traces", "train_traces", "predict_traces")


def esc(value: Any) -> str:
    """report.esc's rule (report imports this module, so not imported from there): every string from a record."""
    return html.escape(str(value), quote=True)


def _split(version: str) -> Tuple[str, str]:
    """'2.16.2+tf_keras' -> ('2.16.2', 'tf_keras'); '2.21.0' -> ('2.21.0', '')."""
    release, _, label = str(version).partition("+")
    return release, label


def previous(version: str, versions: Sequence[str]) -> Optional[str]:
    """The column a column is read against: the last one before it (version order) of an earlier release with the
    same axis label; for a labelled column with none, the last plain one of an earlier release; else None."""
    release, label = _split(version)
    earlier = [v for v in sorted(versions, key=version_key)
               if version_key(_split(v)[0]) < version_key(release)]
    same = [v for v in earlier if _split(v)[1] == label]
    if same:
        return same[-1]
    plain = [v for v in earlier if not _split(v)[1]]
    return plain[-1] if label and plain else None


def _state(record) -> Optional[Tuple[str, Optional[str]]]:
    if record is None or record.get("status") != "ok":
        return None
    s = record.get("summary") or {}
    return (s.get("verdict"), s.get("growth_kind")) if s.get("verdict") else None


def change(before, after) -> Optional[str]:
    """'worse', 'better' or 'other' when the (verdict, what grew) of two records differ; None when the same or
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


def commands(loop: str, strategy: str, good: str, bad: str) -> List[Tuple[str, str]]:
    """[(what, command)] that bisect, attribute and ablate the change of a pair from `good` to `bad` (columns),
    with only options those commands have: the release of each side, --python for a Python axis, ablate's
    --keras tf_keras for the tf_keras axis (triage and attribute measure the release's own Keras: not offered)."""
    from .loops import LOOPS
    from .strategies import STRATEGIES

    (good_rel, good_label), (bad_rel, bad_label) = _split(good), _split(bad)
    good_rel, bad_rel = _cli_version(good_rel), _cli_version(bad_rel)
    nightly = good_rel.startswith("nightly:") or bad_rel.startswith("nightly:")
    pythons = {re.fullmatch(r"py(\d+\.\d+)", lb).group(1) for lb in (good_label, bad_label)
               if re.fullmatch(r"py(\d+\.\d+)", lb)}
    python = f" --python {next(iter(pythons))}" if len(pythons) == 1 and good_label == bad_label else ""
    known = loop in LOOPS
    where = f"--loop {loop}" if known else "--repro FILE"
    out = []
    if "tf_keras" not in (good_label, bad_label) and (not pythons or python):
        strat = f" --strategy {strategy}" if strategy in STRATEGIES else ""
        out.append(("which release changed it", f"kerasbench triage --good {good_rel} --bad {bad_rel} {where}"
                                                f"{strat}{python}"))
        if not nightly:  # attribute takes releases (or asv environments), not nightlies
            out.append(("which package carries it", f"kerasbench attribute --good {good_rel} --bad {bad_rel} {where}"
                                                    f"{strat}{python}"))
    rebuilds = known and "rebuild_no_clear" in STRATEGIES and loop in STRATEGIES["rebuild_no_clear"].applies_to
    if rebuilds or not known:
        keras = " --keras tf_keras" if bad_label == "tf_keras" else ""
        bad_python = re.fullmatch(r"py(\d+\.\d+)", bad_label)
        out.append(("which cleanup steps it needs there", f"kerasbench ablate {where} --tf {bad_rel}{keras}"
                                                          + (f" --python {bad_python.group(1)}" if bad_python else "")))
    return out


def _cli_version(release: str) -> str:
    """A column's release as the commands take it: a nightly's label (2.22.0-dev20260514) is nightly:2026-05-14."""
    m = re.fullmatch(r"[\d.]+-?dev(\d{4})(\d{2})(\d{2})", release)
    return f"nightly:{m.group(1)}-{m.group(2)}-{m.group(3)}" if m else release


def _kib(v) -> str:
    return f"{v / KIB:+,.1f}" if _finite(v) else "n/a"


def _mib(v) -> str:
    return f"{v / MIB:,.1f} MiB" if _finite(v) else "n/a"


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _details(record, version) -> List[str]:
    s = record.get("summary") or {}
    lines = [f"TF {version}: RSS {s.get('verdict')}, slope {_kib(s.get('growth_per_iter'))} KiB/iteration"
             + (f" (95% CI {_kib(s.get('growth_ci_low'))} … {_kib(s.get('growth_ci_high'))})"
                if _finite(s.get("growth_ci_low")) else ""),
             f"what grew: {s.get('growth_kind') or 'n/a (heap not read)'}",
             f"peak: {_mib(s.get('peak_loop'))} (over baseline {_mib(s.get('peak_over_baseline'))})",
             f"heap slope: {_kib(s.get('heap_growth_per_iter'))} KiB/iteration (heap verdict "
             f"{s.get('heap_verdict') or 'n/a'})"]
    traces = [f"{k} {s[k]:g}" for k in TRACES if _finite(s.get(k))]
    lines.append("traces: " + (", ".join(traces) if traces else "n/a"))
    if s.get("repeats") is not None:
        lines.append(f"repeats: {s.get('repeats')}, floor {(s.get('floor') or 0) / KIB:g} KiB/iteration")
    if s.get("why"):
        lines.append(f"not decided: {s['why']}")
    return lines


def _cell(record, version, prev, prev_record, cid) -> Tuple[str, Optional[str]]:
    """(one <td>, its change or None)."""
    if record is None:
        return f'<td class="na" title="not measured on TF {esc(version)}">n/a</td>', None
    if record.get("status") != "ok":
        label = "n/a" if record.get("status") == "skipped" else "failed"
        return (f'<td class="na {label}" title="{esc(record.get("status"))}: {esc(record.get("reason"))}">'
                f"{label}</td>"), None
    s = record.get("summary") or {}
    verdict, kind = s.get("verdict") or "n/a", s.get("growth_kind")
    moved = change(prev_record, record) if prev else None
    tip = _details(record, version)
    glyph, cls = "", f"v-{verdict}"
    if moved:
        p = prev_record["summary"]
        tip.insert(0, f"changed from TF {prev}: {p.get('verdict')}/{p.get('growth_kind') or '-'} → "
                      f"{verdict}/{kind or '-'}")
        hardware = compare.hardware_note(prev_record, record)[1]
        if hardware:
            tip.insert(1, f"different hardware ({hardware}): the change may be the machine's")
        glyph = f'<span class="glyph">{GLYPHS[moved]}</span>'
        cls += f" changed {moved}"
    more = "".join(f"<li>{esc(line)}</li>" for line in tip)
    if moved:
        more += f'<li><a href="#{cid}">commands for this change ↓</a></li>'
    kind_html = f'<span class="kind k-{esc(kind)}">{esc(kind)}</span>' if kind else ""
    return (f'<td class="{esc(cls)}" tabindex="0" title="{esc(chr(10).join(tip))}">{glyph}'
            f'<span class="verdict">{esc(verdict)}</span>{kind_html}'
            f'<span class="slope">{esc(_kib(s.get("growth_per_iter")))} KiB/it</span>'
            f'<ul class="more">{more}</ul></td>'), moved


def section(groups: compare.Groups) -> str:
    """The atlas as a <div id="atlas"> (its own style and script inline; not a <section>: those are the loop
    shapes'); '' for records of one version."""
    versions = sorted(groups, key=version_key)
    if len(versions) < 2:
        return ""
    pairs = sorted({p for g in groups.values() for p in g}, key=compare.pair_order)
    prev = {v: previous(v, versions) for v in versions}
    rows, changes = [], []
    for loop, strategy in pairs:
        tds = []
        for v in versions:
            record = groups[v].get((loop, strategy), (None, None))[0]
            p = prev[v]
            prev_record = groups[p].get((loop, strategy), (None, None))[0] if p else None
            cid = f"atlas-change-{len(changes)}"
            td, moved = _cell(record, v, p, prev_record, cid)
            tds.append(td)
            if moved:
                changes.append((cid, loop, strategy, p, v, moved, prev_record, record))
        rows.append(f'<tr data-loop="{esc(loop)}" data-strategy="{esc(strategy)}">'
                    f'<th class="pair">{esc(loop)} <span class="x">×</span> {esc(strategy)}</th>{"".join(tds)}</tr>')
    head = "".join(f'<th class="ver">{esc(_split(v)[0])}'
                   + (f'<br><small>+{esc(_split(v)[1])}</small>' if _split(v)[1] else "")
                   + (f'<br><small class="prev">vs {esc(prev[v])}</small>' if prev[v] else "") + "</th>"
                   for v in versions)
    loops = list(dict.fromkeys(lp for lp, _ in pairs))
    strategies = sorted({s for _, s in pairs}, key=lambda s: compare.pair_order(("", s)))
    options = "".join(f'<option value="{esc(x)}">{esc(x)}</option>' for x in loops)
    s_options = "".join(f'<option value="{esc(x)}">{esc(x)}</option>' for x in strategies)
    items = []
    for cid, loop, strategy, p, v, moved, before, after in changes:
        b, a = before["summary"], after["summary"]
        cmds = "".join(f'<li>{esc(what)}: <code class="cmd">{esc(cmd)}</code></li>'
                       for what, cmd in commands(loop, strategy, p, v))
        items.append(f'<li id="{cid}" data-loop="{esc(loop)}" data-strategy="{esc(strategy)}">'
                     f'<span class="glyph {moved}">{GLYPHS[moved]}</span> <b>{esc(loop)} × {esc(strategy)}</b>, '
                     f"TF {esc(p)} → {esc(v)}: {esc(b.get('verdict'))}/{esc(b.get('growth_kind') or '-')} "
                     f"({esc(_kib(b.get('growth_per_iter')))} KiB/it) → {esc(a.get('verdict'))}/"
                     f"{esc(a.get('growth_kind') or '-')} ({esc(_kib(a.get('growth_per_iter')))} KiB/it)"
                     + (f' <span class="hw">different hardware ({esc(hw)}): measure both on one machine</span>'
                        if (hw := compare.hardware_note(before, after)[1]) else "")
                     + f'<ul class="cmds">{cmds}</ul></li>')
    listing = (f'<ol class="changes">{"".join(items)}</ol>' if items
               else "<p>No pair changes its verdict or what grew between consecutive versions.</p>")
    return f"""<div id="atlas" class="atlas"><style>{CSS}</style>
<h2>Atlas: every pair across the TF versions</h2>
<p class="read">{esc(HOW_TO_READ)}</p>
<div class="filters">Loop <select id="atlas-loop"><option value="">all</option>{options}</select>
Strategy <select id="atlas-strategy"><option value="">all</option>{s_options}</select>
<label><input type="checkbox" id="atlas-changed"> only rows with a change</label>
<span class="legend"><span class="key changed worse">▲</span> worse than the previous version
<span class="key changed better">▼</span> better <span class="key changed other">◆</span> different (a side undecided)
<span class="key v-grows">grows</span> <span class="key v-flat">flat</span>
<span class="key v-inconclusive">inconclusive</span> the RSS verdict; then what grew; the number is the RSS slope,
KiB/iteration</span></div>
<div class="scroll"><table class="atlas"><thead><tr><th>loop × strategy \\ TF</th>{head}</tr></thead>
<tbody>{"".join(rows)}</tbody></table></div>
<h3>What changed, and the commands that explain it ({len(changes)} in all)</h3>{listing}
<script>{JS}</script></div>
"""


def page(paths: Sequence[str], groups: compare.Groups) -> str:
    """The atlas alone as one offline page (`report --atlas`)."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    versions = sorted(groups, key=version_key)
    body = section(groups) or ("<p>The atlas needs records of at least two TF versions; these hold "
                               f"{esc(', '.join(versions)) or 'none'}.</p>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>kerasbench atlas: TF {esc(", ".join(versions))}</title><style>{PAGE_CSS}</style></head>
<body><h1>kerasbench atlas</h1>{body}
<p class="read">Records: {esc(", ".join(paths))}. Generated {now} by kerasbench {__version__}; `kerasbench report`
on the same records without --atlas gives the full report (heat-tables, plots, curves).</p></body></html>
"""


def build(paths: Sequence[str]) -> str:
    """The atlas-only page of the records under `paths` (compare's inputs and checks)."""
    return page(paths, compare.group(compare.load(paths)))


HOW_TO_READ = (
    "A row per loop shape × cleanup strategy, a column per TF version (a release with tf_keras or on another Python "
    "is a column of its own). Each cell: the run's RSS verdict (grows, flat, inconclusive), what grew (leak: the "
    "heap grows; retention: the allocator keeps pages; flat) and the RSS slope in KiB/iteration. Hover or click a "
    "cell for the peak, the heap slope and the trace counts. A thick left border and ▲ / ▼ / ◆ mark a cell whose "
    "verdict or what grew differs from the previous version of its axis (named under each column); the list below "
    "the map gives, per change, the commands that find the release (triage), the package (attribute) and the "
    "cleanup steps (ablate) behind it. n/a: not measured or does not apply; failed: the worker failed."
)

PAGE_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#111;max-width:1500px}
h1{margin:0 0 .3em}h2{border-bottom:1px solid #ccc;margin-top:1.2em}.read{max-width:70em;color:#333}
"""

CSS = """
.atlas .filters{margin:.4em 0 .8em;display:flex;flex-wrap:wrap;gap:.4em 1em;align-items:center}
.atlas .legend{color:#333;font-size:12px}.atlas .key{display:inline-block;padding:0 4px;border-radius:3px}
.atlas .scroll{overflow-x:auto}
table.atlas{border-collapse:collapse;margin:0 0 1em}
table.atlas th,table.atlas td{border:1px solid #ddd;padding:3px 6px;white-space:nowrap;vertical-align:top}
table.atlas th.pair{text-align:left;font-weight:500}table.atlas th.pair .x{color:#999}
table.atlas th.ver{font-weight:600;text-align:center}table.atlas th.ver small{font-weight:400;color:#666}
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
.atlas ul.more{display:none;margin:4px 0 0;padding-left:1.1em;font-size:11px;white-space:normal;width:22em}
.atlas td.open ul.more{display:block}
.atlas ol.changes li{margin:.3em 0}.atlas ul.cmds{margin:.2em 0;padding-left:1.2em;font-size:12px}
.atlas code.cmd{background:#f4f4f4;border:1px solid #ddd;border-radius:3px;padding:0 4px;user-select:all}
.atlas .hw{color:#a33;font-size:12px}.atlas tr.hidden,.atlas li.hidden{display:none}
"""

JS = """
(function () {
  var root = document.getElementById('atlas');
  var loop = document.getElementById('atlas-loop'), strategy = document.getElementById('atlas-strategy');
  var only = document.getElementById('atlas-changed');
  function apply() {
    root.querySelectorAll('tr[data-loop], ol.changes > li').forEach(function (el) {
      var show = (!loop.value || el.dataset.loop === loop.value) &&
        (!strategy.value || el.dataset.strategy === strategy.value) &&
        (!only.checked || el.tagName !== 'TR' || el.querySelector('td.changed') !== null);
      el.classList.toggle('hidden', !show);
    });
  }
  [loop, strategy, only].forEach(function (c) { c.addEventListener('change', apply); });
  root.querySelectorAll('table.atlas td[tabindex]').forEach(function (td) {
    function toggle() { td.classList.toggle('open'); }
    td.addEventListener('click', function (e) { if (e.target.tagName !== 'A') { toggle(); } });
    td.addEventListener('keydown', function (e) {
      if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); toggle(); }
    });
  });
})();
"""
