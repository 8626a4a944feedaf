"""`kerasbench report`: records of several TF versions as one self-contained, offline HTML page.

`compare` answers "what changed?" one cell at a time; a page answers "where is the memory going?"
at a glance: per loop shape a heat-table (strategy × TF version) of each metric with a report view
in kerasbench.metrics (growth per iteration, loop peak; the GPU peaks where measured), a line plot
of each across versions, the RSS curve behind every cell, and what each run ran on. The inputs,
their checks and the verdicts are `compare`'s own (load_records, group, pick_baseline, compare),
so both commands accept and refuse the same records. Plots are SVG drawn here; the page loads
nothing (no CDN, no external script), so it opens from a CI artifact or a cluster node.
"""

from __future__ import annotations

import datetime
import html
import math
import os
from typing import Any, List, Optional, Sequence, TextIO, Tuple

from . import __version__, compare, machine as machines, stats
from .errors import UsageError
from .files import check_not_input, write_text
from .metrics import METRICS, Metric
from .record import Record
from .tree import newest_run, place_of
from .trace import record_trace
from .releases import version_key
from .units import KIB, MIB

FILENAME = "kerasbench-report.html"
DEFAULT_OUTPUT = os.path.join(".asv", "html", FILENAME)  # beside the asv dashboard of `kerasbench publish`


def shown(records: Sequence[Record]) -> List[Metric]:
    """The metrics with a report view (kerasbench.metrics), each optional one (heap, GPU) only when a record has it."""
    return [m for m in METRICS.values() if m.report and (not m.report.optional or any(
        r["summary"].get(m.name) is not None for r in records))]


def _judged(metrics: Sequence[Metric]) -> List[str]:
    """Those shown that compare judges against the baseline (they have a compare rule)."""
    return [m.name for m in metrics if m.compare is not None]


PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")
DASHES = ("", "6 3", "2 3")  # beyond ten strategies a colour comes back with a dash pattern
MARKS = {"regressed": "▲", "improved": "▼", "unchanged": "=", "inconclusive": "?", "not comparable": "≠"}


def esc(value: Any) -> str:
    """Any text bound for the page (element or attribute): every string from a record goes through here."""
    return html.escape(str(value), quote=True)


# ---------------------------------------------------------------- the data


def build(paths: Sequence[str], baseline: Optional[str] = None) -> str:
    """The report page for the records under `paths`; UsageError (compare's) on bad input."""
    groups = compare.group(compare.load(paths))
    versions = sorted(groups, key=version_key)
    baseline = compare.pick_baseline(versions, baseline)
    records = [r for g in groups.values() for r, _ in g.values()]
    metrics = shown(records)
    cells = compare.compare(groups, baseline=baseline, metrics=_judged(metrics)) if len(versions) > 1 else []
    verdicts = {(c["loop"], c["strategy"], c["metric"], c["version"]): c for c in cells}
    pairs = sorted({p for g in groups.values() for p in g}, key=compare.pair_order)
    loops = list(dict.fromkeys(loop for loop, _ in pairs))
    curves = {}  # (loop, strategy, version) -> element id of its RSS curve
    sections = [_section(loop, [s for lp, s in pairs if lp == loop], versions, baseline, groups, verdicts, metrics,
                         curves) for loop in loops]
    sections = _ablations(groups, versions) + sections
    return _page(paths, groups, versions, baseline, cells, loops, sections)


def _record(groups, version, loop, strategy):
    return groups[version].get((loop, strategy), (None, None))[0]


def _series(record):
    """[(label, RSS per iteration)] of every repeat, including a stopped worker's partial curve."""
    found = []
    for i, rep in enumerate(record.get("repeats") or []):
        rss = (rep.get("result") or {}).get("series", {}).get("rss") or rep.get("partial_rss")
        if rss:
            found.append((f"repeat {i + 1}" + ("" if rep.get("result") else f" ({rep.get('status')})"), rss))
    return found


# ---------------------------------------------------------------- heat-tables


def _shade(metric, value, values):
    """Background colour by magnitude: white (none) to deep red (the largest in the table, or metric.span).

    Growth: log scale from 1 KiB/iteration. Peaks: above the table's smallest, over at least 16 MiB
    (the view's span, metrics.MIN_RSS), so a table whose peaks differ by a few hundred KiB stays white.
    """
    view = metric.report
    if view.log:
        top = max([abs(v) for v in values] + [view.span])
        t = math.log10(max(abs(value), KIB) / KIB) / math.log10(top / KIB)
        hue = 8 if value >= 0 else 210  # shrinking memory in blue
    else:
        low, high = min(values), max(values)
        t, hue = (value - low) / max(high - low, view.span), 8
    light = 97 - 47 * t
    return f"background:hsl({hue},70%,{light:.0f}%);color:{'#fff' if light < 62 else '#111'}"


def _cell(metric, record, version, baseline, verdict, curve, values):
    """One <td>: value, colour, the run's own verdict, compare's verdict vs the baseline; why in the tooltip."""
    attrs = f' data-curve="{curve}" tabindex="0"' if curve else ""
    if record is None:
        return f'<td class="na" title="not measured on TF {esc(version)}">n/a</td>'
    if record["status"] != "ok":  # skipped: does not apply or cannot run here; failed or stopped: a broken run
        cls, label = ("na", "n/a") if record["status"] == "skipped" else ("failed", "failed")
        return f'<td class="{cls}" title="{esc(record["status"])}: {esc(record.get("reason"))}"{attrs}>{label}</td>'
    s = record["summary"]
    view, value = metric.report, s.get(metric.name)
    if value is None or not math.isfinite(value):
        return f'<td class="na" title="no {esc(view.title.lower())} in this record"{attrs}>n/a</td>'
    tip = [f"{view.title}: {view.text(value)} {view.unit} (TF {version}, {s.get('repeats')} repeat(s))"]
    badge = ""
    if metric.name == "growth_per_iter":  # the run's own verdict is on this metric
        if s.get("growth_ci_low") is not None:
            tip.append(f"95% CI [{view.text(s['growth_ci_low'])}, {view.text(s['growth_ci_high'])}] {view.unit}")
        tip.append(f"verdict {s.get('verdict')} (floor {(s.get('floor') or 0) / KIB:g} KiB/iter)")
        badge = f'<span class="run {esc(s.get("verdict"))}">{esc(s.get("verdict"))}</span>'
        if s.get("growth_kind"):  # what grew: the heap says leak or allocator retention
            tip.append(f"what grew: {s['growth_kind']} (heap verdict {s.get('heap_verdict')})")
            badge += f'<span class="run kind {esc(s["growth_kind"])}">{esc(s["growth_kind"])}</span>'
    if metric.name == "heap_growth_per_iter" and s.get("heap_verdict"):
        tip.append(f"heap verdict {s['heap_verdict']} (heap floor {(s.get('heap_floor') or 0) / KIB:g} KiB/iter)")
    if metric.name in ("growth_per_iter", "heap_growth_per_iter") and s.get("measured"):
        tip.append(f"measured {', '.join(map(str, s['measured']))} iterations ({', '.join(s.get('stopped') or [])}); "
                   f"warm-up found {', '.join(map(str, s.get('warmup_found') or []))}")
        if s.get("why"):
            tip.append(f"not decided: {s['why']}")
    if verdict:
        tip.append(f"vs TF {baseline}: {verdict['verdict']}: {verdict['why']}")  # tip is escaped below
        if verdict["verdict"] != "n/a":
            badge += f'<span class="cmp {esc(verdict["verdict"])}">{MARKS[verdict["verdict"]]}</span>'
    return (f'<td class="ok" data-value="{value!r}" style="{_shade(metric, value, values)}" '
            f'title="{esc(chr(10).join(tip))}"{attrs}>{view.text(value)}{badge}</td>')


def _table(metric, loop, strategies, versions, baseline, groups, verdicts, curves):
    values = [v for s in strategies for ver in versions
              for r in [_record(groups, ver, loop, s)] if r and r["status"] == "ok"
              for v in [r["summary"].get(metric.name)] if v is not None and math.isfinite(v)]
    marked = baseline if len(versions) > 1 else None
    head = "".join(f'<th class="ver">{esc(v)}{"<br><small>baseline</small>" if v == marked else ""}</th>'
                   for v in versions)
    rows = []
    for s in strategies:
        tds = []
        for ver in versions:
            tds.append(_cell(metric, _record(groups, ver, loop, s), ver, baseline,
                             verdicts.get((loop, s, metric.name, ver)), curves.get((loop, s, ver)), values))
        rows.append(f'<tr data-strategy="{esc(s)}"><th class="strategy">{esc(s)}</th>{"".join(tds)}</tr>')
    return (f'<table class="heat" data-metric="{esc(metric.name)}"><caption>{esc(metric.report.title)} '
            f'({esc(metric.report.unit)})</caption>'
            f'<thead><tr><th>strategy \\ TF</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


# ---------------------------------------------------------------- SVG plots


def _ticks(low, high, n=5):
    """About n round tick values covering [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0]
    if high <= low:
        low, high = low - 1, high + 1
    raw = (high - low) / n
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 2.5, 5, 10) if raw <= m * step)
    first = math.floor(low / step) * step
    return [first + i * step for i in range(int(math.ceil((high - first) / step)) + 1)]


def _num(v):
    return f"{v:g}" if abs(v) < 1e5 else f"{v:.3g}"


def plot(lines: Sequence[tuple], xticks: Sequence[Tuple[float, str]], ylabel: str, title: str, width: int = 520,
         height: int = 260, span: float = 0.0) -> str:
    """An SVG line plot. lines: [(name, colour, dash, [(x, y or None)])]; None breaks the line.

    The y axis covers at least `span` around the data, so noise-sized differences stay flat lines.
    """
    left, right, top, bottom = 58, 12, 26, 34
    ys = [y for _, _, _, pts in lines for _, y in pts if y is not None]
    if ys and max(ys) - min(ys) < span:
        middle = (max(ys) + min(ys)) / 2
        ys += [middle - span / 2, middle + span / 2]
    xs = [x for x, _ in xticks] + [x for _, _, _, pts in lines for x, _ in pts]
    yt = _ticks(min(ys, default=0.0), max(ys, default=1.0))
    y0, y1 = yt[0], yt[-1]
    x0, x1 = min(xs, default=0), max(xs, default=1)
    pad = 0.5 if x1 == x0 or len(xticks) < 8 else 0  # categories: half a step of room at both ends
    x0, x1 = x0 - pad, x1 + pad

    def px(x):
        return left + (x - x0) / ((x1 - x0) or 1) * (width - left - right)

    def py(y):
        return top + (1 - (y - y0) / ((y1 - y0) or 1)) * (height - top - bottom)

    out = [f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(title)}">',
           f'<text x="{width / 2:.0f}" y="16" class="title">{esc(title)}</text>']
    for y in yt:
        out.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{py(y):.1f}" y2="{py(y):.1f}"/>'
                   f'<text class="tick" x="{left - 4}" y="{py(y) + 4:.1f}" text-anchor="end">{_num(y)}</text>')
    for x, label in xticks:
        out.append(f'<text class="tick" x="{px(x):.1f}" y="{height - bottom + 14}" '
                   f'text-anchor="middle">{esc(label)}</text>')
    out.append(f'<text class="tick" transform="translate(12 {(top + height - bottom) / 2:.0f}) rotate(-90)" '
               f'text-anchor="middle">{esc(ylabel)}</text>')
    out.append(f'<rect class="frame" x="{left}" y="{top}" width="{width - left - right}" '
               f'height="{height - top - bottom}"/>')
    for name, colour, dash, pts in lines:
        segments, current = [], []
        for x, y in pts + [(None, None)]:
            if y is None:
                if current:
                    segments.append(current)
                current = []
            else:
                current.append((px(x), py(y)))
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<g class="line" data-name="{esc(name)}"><title>{esc(name)}</title>')
        for seg in segments:
            points = " ".join(f"{a:.1f},{b:.1f}" for a, b in seg)
            out.append(f'<polyline points="{points}" stroke="{colour}"{dash_attr}/>')
            if len(pts) <= 12:  # a dot per version; curves of many iterations stay plain lines
                out += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{colour}"/>' for a, b in seg]
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


def _style(i):
    return PALETTE[i % len(PALETTE)], DASHES[(i // len(PALETTE)) % len(DASHES)]


def _legend(strategies):
    items = []
    for i, s in enumerate(strategies):
        colour, dash = _style(i)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        items.append(f'<span><svg width="22" height="8"><line x1="0" y1="4" x2="22" y2="4" stroke="{colour}" '
                     f'stroke-width="2.5"{dash_attr}/></svg>{esc(s)}</span>')
    return f'<div class="legend">{"".join(items)}</div>'


def _version_plot(metric, loop, strategies, versions, groups):
    view, lines = metric.report, []
    for i, s in enumerate(strategies):
        pts = []
        for x, ver in enumerate(versions):
            r = _record(groups, ver, loop, s)
            v = r["summary"].get(metric.name) if r and r["status"] == "ok" else None
            pts.append((x, v / view.scale if v is not None and math.isfinite(v) else None))
        lines.append((s, *_style(i), pts))
    span = (stats.DEFAULT_FLOOR if view.log else view.span) / view.scale  # growth: the default floor
    return plot(lines, list(enumerate(versions)), view.unit, f"{loop}: {view.title} by TF version", span=span)


def _curve(record, loop, strategy, version, element_id):
    """The hidden RSS-per-iteration plot of one cell, repeats overlaid, with the numbers it summarizes."""
    series = _series(record)
    n = max(len(rss) for _, rss in series)
    lines = [(label, PALETTE[i % len(PALETTE)], "", [(k + 1, v / MIB) for k, v in enumerate(rss)])
             for i, (label, rss) in enumerate(series)]
    step = max(1, math.ceil(n / 10))
    svg = plot(lines, [(k, str(k)) for k in range(1, n + 1, step)], "RSS MiB",
               f"{loop} × {strategy}, TF {version}: RSS after each iteration", width=560)
    s = record["summary"]
    facts = [f"status {record['status']}" + (f": {record.get('reason')}" if record.get("reason") else "")]
    if s.get("growth_per_iter") is not None and math.isfinite(s["growth_per_iter"]):
        growth = METRICS["growth_per_iter"].report.text(s["growth_per_iter"])
        facts.append(f"growth {growth} KiB/iter ({s.get('verdict')})")
    if s.get("heap_growth_per_iter") is not None and math.isfinite(s["heap_growth_per_iter"]):
        heap = METRICS["heap_growth_per_iter"].report.text(s["heap_growth_per_iter"])
        facts.append(f"heap {heap} KiB/iter ({s.get('heap_verdict')}): {s.get('growth_kind')}")
    if s.get("measured"):
        facts.append(f"{', '.join(map(str, s['measured']))} iterations measured ({', '.join(s.get('stopped') or [])})"
                     f", the first {', '.join(map(str, s.get('warmup_found') or []))} discarded as warm-up")
    if s.get("why"):
        facts.append(f"not decided: {s['why']}")
    if s.get("peak_loop") is not None:
        facts.append(f"peak {s['peak_loop'] / MIB:.1f} MiB")
    if s.get("retained") is not None:
        facts.append(f"retained after cleanup {s['retained'] / MIB:+.1f} MiB")
    key = "".join(f'<span style="color:{c}">━ {esc(label)}</span> ' for label, c, _, _ in lines)
    return (f'<figure class="curve" id="{element_id}" hidden>{svg}'
            f'<figcaption>{key}<br>{esc("; ".join(facts))}</figcaption>{_functions_table(record)}</figure>')


def _functions_table(record, top=6):
    """The pair's most traced tf.functions (the first repeat's table), or nothing where none was counted."""
    result = next((r["result"] for r in record.get("repeats", []) if r.get("result")), None) or {}
    rows = result.get("functions") or []
    if not rows:
        return ""
    cells = "".join(f"<tr><td>{esc(f['owner'])}</td><td>{esc(f['function'])}</td><td>{f['instances']}</td>"
                    f"<td>{f['traces']}</td><td>{'?' if f.get('live') is None else f['live']} / "
                    f"{'?' if f.get('held') is None else f['held']}</td>"
                    f"<td>{esc(', '.join(f.get('paths') or []))}</td></tr>" for f in rows[:top])
    more = f" ({len(rows) - top} more in the record)" if len(rows) > top else ""
    return (f'<table class="functions"><caption>tf.function traces, warm-up included{esc(more)}</caption>'
            "<tr><th>owner</th><th>function</th><th>instances</th><th>traces</th><th>alive at the loop's end: "
            "instances / concrete functions</th>"
            f"<th>path</th></tr>{cells}</table>")


# ---------------------------------------------------------------- environment


def _env(key):
    return lambda r, path: (r.get("environment") or {}).get(key)


def _machine(r, path):
    e = r.get("environment") or {}
    if not e:
        return None
    memory = f"{e['memory_total'] / 1024**3:.0f} GiB" if e.get("memory_total") else "? GiB"
    return (f"{machines.label(e)}: {e.get('cpu_model')}, {e.get('cpu_count')} cores, {memory}, "
            f"{e.get('machine')}")


def _device(r, path):
    e = r.get("environment") or {}
    gpus = ", ".join(g.get("name", "?") for g in e.get("gpus") or []) or e.get("gpu_name")
    parts = [r["spec"].get("device") or e.get("device") or "cpu", f"({gpus})" if gpus else "",
             f"driver {e['gpu_driver']}" if e.get("gpu_driver") else "",
             f"CUDA {e['cuda_version']}" if e.get("cuda_version") else ""]
    return " ".join(p for p in parts if p)


def _allocator(r, path):
    detected = (r.get("environment") or {}).get("allocator")
    return r["spec"].get("allocator", "glibc") + (f" (detected {detected})" if detected else "")


def _profile(r, path):
    spec = r["spec"]  # records from before profiles were named have none
    return (f"{spec.get('profile') or 'unnamed'}: {spec.get('iterations')} it, {spec.get('warmup')} warm-up, "
            f"{spec.get('repeats')} rep")


def _floor(r, path):
    floor, source = r["summary"].get("floor"), r["summary"].get("floor_source")
    if not floor:
        return None
    return f"{floor / KIB:g} KiB/iter" + (f" ({source})" if source else "")


ENV_COLUMNS = (  # heading, what one record says (a run is every record of one TF version)
    ("Keras", _env("keras")), ("numpy", _env("numpy")), ("Python", _env("python")), ("machine", _machine),
    ("device", _device), ("allocator", _allocator), ("profile", _profile), ("floor", _floor),
    ("kerasbench", _env("kerasbench")), ("commit", lambda r, path: place_of(path)[1] or "unknown"),
    ("records", lambda r, path: os.path.dirname(os.path.abspath(path))),
)


def _env_table(groups, versions):
    """One row per run (TF version): what it ran on; values that differ within a run are joined with ' / '."""
    rows = []
    for version in versions:
        recs = list(groups[version].values())
        row = [version]
        for heading, fn in ENV_COLUMNS:
            found = " / ".join(dict.fromkeys(str(v) for v in (fn(r, path) for r, path in recs) if v not in (None, "")))
            row.append((f"{len(recs)} pairs in " if heading == "records" else "") + (found or "—"))
        rows.append(row)
    head = "".join(f"<th>{esc(h)}</th>" for h in ["TF"] + [h for h, _ in ENV_COLUMNS])
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="env"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


# ---------------------------------------------------------------- cleanup ablations (kerasbench.ablate)


def _ablations(groups, versions) -> List[str]:
    """A section per ablation found among each version's records: the variant and per-step tables, the conclusion."""
    from . import ablate

    found = []
    for ver in versions:
        records = [r for r, _ in groups[ver].values()]
        for loop, base, steps in ablate.find(records):
            result = ablate.analyse(records, loop, steps, base)

            def table(header, rows, cls):
                head = "".join(f"<th>{esc(h)}</th>" for h in header)
                body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
                return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'

            variants = table(ablate.variant_header(result), ablate.variant_rows(result), "ablation-variants")
            found.append(
                f'<section class="ablation" id="ablation-{esc(loop)}-{esc(ver)}" data-loop="{esc(loop)}" '
                f'data-version="{esc(ver)}"><h2>Cleanup ablation: {esc(loop)} on {esc(base)}, TF {esc(ver)}</h2>'
                f'<div class="tables">{variants}'
                f'{table(ablate.STEP_HEADER, ablate.step_rows(result), "ablation-steps")}</div>'
                f'<ul class="conclusion">{"".join(f"<li>{esc(line)}</li>" for line in result["conclusion"])}</ul>'
                "</section>")
    return found


# ---------------------------------------------------------------- the page


def _section(loop, strategies, versions, baseline, groups, verdicts, metrics, curves):
    figures = []
    for s in strategies:
        for ver in versions:
            r = _record(groups, ver, loop, s)
            if r is not None and _series(r):
                curves[(loop, s, ver)] = f"curve-{len(curves)}"
                figures.append(_curve(r, loop, s, ver, curves[(loop, s, ver)]))
    tables = "".join(_table(m, loop, strategies, versions, baseline, groups, verdicts, curves) for m in metrics)
    plots = "".join(f"<div>{_version_plot(m, loop, strategies, versions, groups)}</div>" for m in metrics)
    traces = "".join(_trace(r, loop, s, ver) for s in strategies for ver in versions
                     for r in [_record(groups, ver, loop, s)] if r is not None and record_trace(r))
    return (f'<section class="loop" id="loop-{esc(loop)}" data-loop="{esc(loop)}"><h2>{esc(loop)}</h2>'
            f'<div class="tables">{tables}</div>'
            f'<div class="curves"><p class="hint">Click a cell for its RSS curve.</p>{"".join(figures)}</div>'
            f'<div class="plots">{plots}</div>{_legend(strategies)}{traces}</section>')


def _trace_sites(rows, unit):
    body = []
    for r in rows:
        kib, count, stack = format(r["bytes_per_iter"] / KIB, "+,.1f"), format(r["count_per_iter"], "+.1f"), \
            " ← ".join(r["stack"])
        body.append(f'<tr><td class="num">{esc(kib)}</td><td class="num">{esc(count)}</td>'
                    f'<td title="{esc(stack)}">{esc(r["site"])}</td></tr>')
    return (f'<table class="sites"><tr><th>KiB/iter</th><th>{esc(unit)}/iter</th><th>site (the stack in the '
            f'tooltip)</th></tr>{"".join(body)}</table>')


def _trace_user(t):
    """The user's lines the growth goes through, and what holds the objects that grow (traces before them: nothing)."""
    mine = (f"<h4>Your code (each allocation at its innermost line in your files)</h4>"
            f"{_trace_sites(t['user_sites'], 'blocks')}" if t.get("user_sites") else "")
    held = "".join(f"<li>{esc(h['type'])} ×{esc(h['alive'])} ({esc(format(h['per_iter'], '+.1f'))}/iteration) held "
                   f"by {esc(' ← '.join(h['held_by']) or 'no referrer the gc tracks')}"
                   f"{'' if h['rooted'] else esc(' ← … (not followed further)')}</li>" for h in t.get("holders") or ())
    return mine + (f"<h4>What holds the objects that grow</h4><ul>{held}</ul>" if held else "")


def _trace(record, loop, strategy, version):
    """A traced record's trace (`run --trace`): the sites and object types that grow, per iteration."""
    t = record_trace(record)
    head = (f'<div class="trace" data-strategy="{esc(strategy)}" data-version="{esc(version)}">'
            f"<h3>Where it grows: {esc(loop)} × {esc(strategy)}, TF {esc(version)}</h3>")
    if t.get("skipped"):
        return head + f"<p>Not traced: {esc(t['skipped'])}.</p></div>"
    types = "".join(f'<tr><td class="num">{esc(format(r["per_iter"], "+.1f"))}</td><td>{esc(r["type"])}</td></tr>'
                    for r in t["types"])
    note = esc(t.get("native_note"))
    native = (f"<h4>Native sites ({note})</h4>{_trace_sites(t['native_sites'], 'allocations')}"
              if t.get("native_sites") else f"<p>Native sites: n/a ({note}).</p>")
    growth, cost = format(t["python_bytes_per_iter"] / KIB, "+,.1f"), format(t["seconds_in_loop"], ".2f")
    return (head + f"<p>Between iteration {esc(t['first'])} and {esc(t['last'])} (tracemalloc and gc): Python heap "
            f"{esc(growth)} KiB/iteration; the trace cost {esc(cost)} s in the loop. Memory figures of a traced run "
            f"are not comparable with untraced ones.</p>{_trace_user(t)}<h4>Python allocation sites</h4>"
            f"{_trace_sites(t['python_sites'], 'blocks')}"
            f'<h4>Object types that grow</h4><table class="types"><tr><th>objects/iter</th><th>type</th></tr>'
            f"{types}</table>{native}</div>")


def _summary(groups, versions, baseline, cells):
    """The header's facts: what was compared, on what, and how many verdicts of each kind."""
    records = [r for g in groups.values() for r, _ in g.values()]
    runs = {}
    for r in records:
        key = r["summary"].get("verdict") if r["status"] == "ok" else ("n/a" if r["status"] == "skipped" else "failed")
        runs[key or "n/a"] = runs.get(key or "n/a", 0) + 1
    seen = {}
    for r in records:
        e = r.get("environment") or {}
        if e:
            seen.setdefault(machines.label(e),
                                f"{e.get('cpu_model')}, {e.get('cpu_count')} cores, "
                                f"{(e.get('memory_total') or 0) / 1024**3:.0f} GiB RAM")
    loops = sorted({r["loop"] for r in records})
    facts = [
        f"<b>Compared</b>: TF {esc(', '.join(versions))} over {len(loops)} loop shape(s) and "
        f"{len({(r['loop'], r['strategy']) for r in records})} (loop, strategy) pairs, {len(records)} records.",
        f"<b>Baseline</b>: TF {esc(baseline)}"
        + ("" if len(versions) > 1 else " (one TF version: no verdicts against a baseline)") + ".",
        "<b>Machine</b>: " + "; ".join(f"{esc(h)} ({esc(m)})" for h, m in seen.items()) + "."
        if seen else "<b>Machine</b>: unknown.",
        "<b>Runs</b>: " + ", ".join(f"{n} {esc(k)}" for k, n in sorted(runs.items()))
        + " (each pair's own growth verdict).",
    ]
    for key in _judged(shown(records)):
        found = compare.counts([c for c in cells if c["metric"] == key])
        if found:
            facts.append(f"<b>{esc(key)} vs TF {esc(baseline)}</b>: {esc(found)}.")
    note = compare.describe(groups).splitlines()[-1]
    if note.startswith("note:"):
        facts.append(f'<span class="warn">{esc(note)}</span>')
    return "".join(f"<li>{f}</li>" for f in facts)


CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#111;max-width:1500px}
h1{margin:0 0 .3em}h2{border-bottom:1px solid #ccc;margin-top:1.6em}
ul.facts{padding-left:1.2em}.warn{color:#a33}.read{max-width:70em;color:#333}
table{border-collapse:collapse;margin:0 1.5em 1em 0}caption{text-align:left;font-weight:600;padding:.2em 0}
th,td{border:1px solid #ddd;padding:2px 6px;white-space:nowrap}th.strategy{text-align:left;font-weight:500}
table.heat td{text-align:right;min-width:5.5em;cursor:default}table.heat td[data-curve]{cursor:pointer}
table.heat td.sel{outline:3px solid #222;outline-offset:-3px}
td.na{color:#888;text-align:center!important}td.failed{background:#fbe3e3;color:#900;text-align:center!important}
.run{font-size:10px;margin-left:4px;padding:0 3px;border-radius:3px;background:rgba(255,255,255,.75);color:#111}
.run.grows{background:#fff;color:#b00;font-weight:700}.run.kind.leak{color:#b00;font-weight:700}
.run.kind.retention{color:#a60}.run.inconclusive{color:#666}
.trace{margin-top:12px}.trace table{border-collapse:collapse;font-size:12px;margin-bottom:8px}
.trace td,.trace th{padding:1px 6px;text-align:left}.trace td.num{text-align:right;font-variant-numeric:tabular-nums}
.cmp{margin-left:3px;padding:0 3px;border-radius:3px;font-weight:700;background:#fff;color:#555}
.cmp.regressed{color:#d00}.cmp.improved{color:#070}
.tables,.plots{display:flex;flex-wrap:wrap;align-items:flex-start}.plots>div{margin:0 1em 1em 0}
.curves{min-height:2em}.hint{color:#777;font-style:italic}
svg.plot text.title{font-size:12px;font-weight:600;text-anchor:middle}svg.plot text.tick{font-size:10px;fill:#444}
svg.plot .grid{stroke:#eee}svg.plot .frame{fill:none;stroke:#999}svg.plot polyline{fill:none;stroke-width:2}
.legend span{display:inline-block;margin:0 1em .2em 0;font-size:12px}.legend svg{vertical-align:middle;margin-right:3px}
table.env td{white-space:normal;font-size:12px;vertical-align:top}
"""

JS = """
document.querySelectorAll('td[data-curve]').forEach(function (td) {
  function show() {
    var section = td.closest('section');
    section.querySelectorAll('figure.curve').forEach(function (f) { f.hidden = f.id !== td.dataset.curve; });
    section.querySelectorAll('td.sel').forEach(function (c) { c.classList.remove('sel'); });
    section.querySelectorAll('td[data-curve="' + td.dataset.curve + '"]')
      .forEach(function (c) { c.classList.add('sel'); });
    section.querySelector('.hint').hidden = true;
  }
  td.addEventListener('click', show);
  td.addEventListener('keydown', function (e) {
    if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); show(); }
  });
});
"""

HOW_TO_READ = (
    "Each loop shape has a heat-table per metric: a row per cleanup strategy, a column per TF version, darker "
    "red meaning more memory (growth on a log scale from 1 KiB to 16 MiB per iteration; peak above the table's "
    "smallest, over at least 16 MiB). "
    "The small label is the run's own verdict on its RSS series (grows, flat or inconclusive against the floor); "
    "▲ regressed, ▼ improved, = unchanged and ? inconclusive are compare's verdicts against the baseline version, "
    "and every cell's tooltip says why. Click a cell to see the RSS after each iteration behind it, one line per "
    "repeat (fresh process); n/a means the pair was not measured or does not apply, failed means the worker "
    "failed or was stopped, with the reason in the tooltip."
)


def _page(paths, groups, versions, baseline, cells, loops, sections):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    nav = " · ".join(f'<a href="#loop-{esc(loop)}">{esc(loop)}</a>' for loop in loops)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>kerasbench report: TF {esc(", ".join(versions))}</title><style>{CSS}</style></head>
<body><header><h1>kerasbench report</h1>
<ul class="facts">{_summary(groups, versions, baseline, cells)}</ul>
<p class="read"><b>How to read it.</b> {esc(HOW_TO_READ)}</p>
<p>Loop shapes: {nav}</p></header>
{"".join(sections)}
<h2>Environment per run</h2>{_env_table(groups, versions)}
<p class="read">Records: {esc(", ".join(paths))}. Generated {now} by kerasbench {__version__};
`kerasbench compare` on the same records gives every headline metric as a table.</p>
<script>{JS}</script></body></html>
"""


# ---------------------------------------------------------------- writing


def write(paths: Sequence[str], output: str = DEFAULT_OUTPUT, baseline: Optional[str] = None) -> str:
    """Build the report and write it atomically to `output` (its folder made if missing)."""
    check_not_input(output, list(paths), "the report")
    text = build(paths, baseline)  # every input error is raised here, before anything is written
    folder = os.path.dirname(os.path.abspath(output))
    try:
        os.makedirs(folder, exist_ok=True)
        write_text(output, text)
    except OSError as e:
        raise UsageError(f"Cannot write the report to {output}: {e.strerror}.") from None
    return output


def write_beside_dashboard(records_dir: str, html_dir: str, out: TextIO) -> Optional[str]:
    """Refresh the report in asv's html folder from the newest host and commit of a records tree (publish)."""
    if not os.path.isdir(records_dir):
        return None
    (host, commit), folders, others = newest_run(records_dir)
    if not folders:
        return None
    path = os.path.join(html_dir, FILENAME)
    try:
        write(folders, path)
    except UsageError as e:
        out.write(f"no HTML report: {e}\n")
        return None
    left = f"; {others} other host/commit folder(s) left out, see `kerasbench report`" if others else ""
    out.write(f"report: {path} ({host}, commit {commit}{left}); open it in a browser, it needs no server\n")
    return path
