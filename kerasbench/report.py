"""`kerasbench report`: records of several TF versions as one self-contained, offline HTML page.

`compare` answers "what changed?" one cell at a time; a page answers "where is the memory going?"
at a glance: per loop shape a heat-table (strategy × TF version) of each metric with a report view
in kerasbench.metrics (growth per iteration, loop peak; the GPU peaks where measured), a line plot
of each across versions with the 95% CIs as whiskers (one release: the strategies side by side), the
memory behind every cell (RSS and heap after each iteration, with the baseline and the floor the verdict
was judged against), and what each run ran on. The inputs, their checks and the verdicts are
`compare`'s own (load_records, group, pick_baseline, compare), so both commands accept and refuse the
same records. Plots are SVG drawn here; the page loads nothing (no CDN, no external script), so it
opens from a CI artifact or a cluster node. `report --svg/--png` writes one of the pictures alone, for
an issue (the PNG by matplotlib where installed, else by headless chromium).
"""

from __future__ import annotations

import datetime
import html
import math
import os
from typing import Any, List, Optional, Sequence, TextIO, Tuple

from . import __version__, atlas, compare, machine as machines, rule
from .errors import UsageError, unknown
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


def build(paths: Sequence[str], baseline: Optional[str] = None, rejudge: bool = False) -> str:
    """The report page for the records under `paths` (`rejudge`: compare.group's); UsageError (compare's) on bad
    input."""
    groups = compare.group(compare.load(paths), rejudge)
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
    sections = [atlas.section(groups)] + _ablations(groups, versions) + sections  # the map first ('' for one version)
    return _page(paths, groups, versions, baseline, cells, loops, sections)


def _record(groups, version, loop, strategy):
    return groups[version].get((loop, strategy), (None, None))[0]


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
#
# Every picture is a standalone SVG drawn with presentation attributes (no page CSS), so the page, `report --svg`
# and `--png`, and a notebook's table (api.Results._repr_html_) show the same drawing. Data first (curve_data,
# chart_data), then the drawing (curve_svg, chart_svg; the matplotlib PNG draws the same data).

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
INK, MUTED, GRID, REF, FRAME = "#222", "#555", "#e8e8e8", "#333", "#999"
CURVE_POINTS = 400  # the most points a curve draws per line: each bucket's lowest and highest reading
MIN_CURVE_SPAN = 4 * MIB  # a curve's y axis spans at least this: RSS moves by pages and glibc's teeth by MiB
BASELINE_DASH, FLOOR_DASH = "7 4", "2 3"
WARMUP_FILL = "#000"  # at WARMUP_OPACITY: the iterations a verdict discarded as warm-up
WARMUP_OPACITY = 0.07


def _ticks(low, high, n=5, integer=False):
    """About n round tick values covering [low, high] (integer: whole steps only, for iterations)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0]
    if high <= low:
        low, high = low - 1, high + 1
    raw = (high - low) / n
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in ((1, 2, 5, 10) if integer else (1, 2, 2.5, 5, 10)) if raw <= m * step)
    step = max(1, round(step)) if integer else step
    first = math.floor(low / step + 1e-9) * step
    count = int(math.ceil((high - first) / step - 1e-9)) + 1
    return [float(f"{first + i * step:.12g}") for i in range(count)]


def _num(v):
    v = 0.0 if v == 0 else v  # no "-0"
    return f"{v:g}" if abs(v) < 1e5 else f"{v:.3g}"


def _scale(low, high, start, end):
    """data -> pixel: `low` at `start`, `high` at `end`."""
    k = (end - start) / ((high - low) or 1)
    return lambda v: start + (v - low) * k


def _width_of(text, size):
    """The drawn width of `text` at font `size`, generously (DejaVu Sans is wide): for layout, never clipping."""
    return len(str(text)) * size * 0.62


def _svg(width, height, label, cls="plot"):
    return [f'<svg class="{cls}" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{esc(label)}" font-family="{FONT}">',
            f'<title>{esc(label)}</title><rect width="100%" height="100%" fill="#fff"/>']


def _text(x, y, s, size=10, anchor="start", fill=MUTED, weight="", extra=""):
    bold = f' font-weight="{weight}"' if weight else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{fill}" text-anchor="{anchor}"{bold}{extra}>'
            f'{esc(s)}</text>')


def _line(x1, y1, x2, y2, stroke, width=1.0, dash="", cls=""):
    extra = (f' stroke-dasharray="{dash}"' if dash else "") + (f' class="{cls}"' if cls else "")
    return (f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}" '
            f'stroke-width="{width}"{extra}/>')


def _polyline(points, stroke, width=1.8, dash=""):
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<polyline points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in points)}" fill="none" stroke="{stroke}" '
            f'stroke-width="{width}" stroke-linejoin="round"{dash_attr}/>')


def _legend(items, x0, y0, width, size=10):
    """A legend laid out in rows inside the picture: items [(text, colour, dash, kind)], kind 'line', 'box' (a
    shaded span) or 'whisker'. Returns (the <g>, its height)."""
    parts, x, baseline, row = ['<g class="legend">'], x0, y0 + size, size + 6
    for text, colour, dash, kind in items:
        w = 24 + _width_of(text, size) + 10
        if x > x0 and x + w > x0 + width:
            x, baseline = x0, baseline + row
        mid = baseline - size * 0.35
        if kind == "box":
            parts.append(f'<rect x="{x:.1f}" y="{mid - 5:.1f}" width="18" height="10" fill="{colour}" '
                         f'fill-opacity="{WARMUP_OPACITY * 2 if colour == WARMUP_FILL else 1}" stroke="{FRAME}" '
                         'stroke-width="0.5"/>')
        elif kind == "whisker":
            parts += [_line(x, mid, x + 18, mid, colour, 1.2), _line(x, mid - 4, x, mid + 4, colour, 1.2),
                      _line(x + 18, mid - 4, x + 18, mid + 4, colour, 1.2),
                      f'<circle cx="{x + 9:.1f}" cy="{mid:.1f}" r="3" fill="{colour}"/>']
        else:
            parts.append(_line(x, mid, x + 18, mid, colour, 2 if not dash else 1.5, dash))
        parts.append(_text(x + 24, baseline, text, size, fill=INK))
        x += w
    parts.append("</g>")
    return "".join(parts), baseline - y0 + 6


def _whisker(at, low, high, colour, vertical):
    """A 95% CI: a bar from `low` to `high` (pixels) with caps, at `at` across it."""
    def seg(a0, b0, a1, b1):
        return _line(a0, b0, a1, b1, colour, 1.2) if vertical else _line(b0, a0, b1, a1, colour, 1.2)

    return (f'<g class="whisker">{seg(at, low, at, high)}{seg(at - 3.5, low, at + 3.5, low)}'
            f'{seg(at - 3.5, high, at + 3.5, high)}</g>')


def _style(i):
    return PALETTE[i % len(PALETTE)], DASHES[(i // len(PALETTE)) % len(DASHES)]


def _ci_keys(metric_name):
    """The summary's 95% CI fields of a metric, where it has them: growth_per_iter -> growth_ci_low/high."""
    if not metric_name.endswith("_per_iter"):
        return None
    stem = metric_name[: -len("_per_iter")]
    low, high = f"{stem}_ci_low", f"{stem}_ci_high"
    return (low, high) if low in METRICS and high in METRICS else None


def _floor_key(metric_name):
    """The summary field of the floor a metric's verdict was judged against (the growth it could not resolve)."""
    return {"growth_per_iter": "floor", "heap_growth_per_iter": "heap_floor"}.get(metric_name)


def _finite(v):
    return v is not None and not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


# ---------------------------------------------------------------- a record's memory curve


def decimate(values, limit=CURVE_POINTS):
    """[(iteration, value)] of a series (iteration 1 first), at most `limit` points: every reading when there are
    few, else the lowest and the highest of each of limit/2 buckets, in order, so a spike or a tooth stays drawn."""
    points = [(k + 1, v) for k, v in enumerate(values) if _finite(v)]
    if len(points) <= limit:
        return points
    buckets, n, out = limit // 2, len(points), []
    for b in range(buckets):
        chunk = points[b * n // buckets:(b + 1) * n // buckets]
        low, high = min(chunk, key=lambda p: p[1]), max(chunk, key=lambda p: p[1])
        out += sorted({low, high})
    return out


def _repeats(record):
    """Each repeat with a series: its label, RSS and heap series, baseline readings and the warm-up its verdicts
    discarded (None where not judged: a stopped worker's partial curve)."""
    s = record.get("summary") or {}
    found, judged = [], 0
    for i, rep in enumerate(record.get("repeats") or []):
        result = rep.get("result") or {}
        rss = (result.get("series") or {}).get("rss") or rep.get("partial_rss")
        if not rss:
            continue
        item = {"label": f"repeat {i + 1}" + ("" if result else f" ({rep.get('status')})"), "rss": rss,
                "heap": (result.get("series") or {}).get("heap") or [], "baseline": result.get("baseline_rss"),
                "heap_baseline": result.get("heap_baseline"), "warmup": None, "heap_warmup": None,
                "heap_unavailable": result.get("heap_unavailable")}
        if result:  # the summary's per-repeat lists hold the repeats with a result, in order
            for key, field in (("warmup", "warmup_found"), ("heap_warmup", "heap_warmup_found")):
                values = s.get(field) or []
                value = values[judged] if judged < len(values) else None
                item[key] = value if _finite(value) and value > 0 else None
            judged += 1
        found.append(item)
    return found


def _series(record):
    """[(label, RSS per iteration)] of every repeat, including a stopped worker's partial curve."""
    return [(r["label"], r["rss"]) for r in _repeats(record)]


def _growth_text(s, metric, verdict_key):
    value = s.get(metric)
    if not _finite(value):
        return None
    view, ci = METRICS[metric].report, _ci_keys(metric)
    text = f"{view.text(value)} KiB/iter"
    if ci and _finite(s.get(ci[0])) and _finite(s.get(ci[1])):
        text += f" (95% CI {view.text(s[ci[0]])} to {view.text(s[ci[1]])})"
    return text + (f": {s[verdict_key]}" if s.get(verdict_key) else "")


def curve_data(record, loop, strategy, version):
    """What a record's memory picture shows: per panel (RSS, then the heap where read) each repeat's readings in
    MiB (decimated), the baseline reading, the floor (a line from the baseline rising at the floor's slope: the
    growth the verdict could not resolve), the warm-up discarded, and a y range of at least MIN_CURVE_SPAN that
    holds them all, so a series flat within a few hundred KiB draws flat."""
    s, repeats = record.get("summary") or {}, _repeats(record)
    n = max((len(r["rss"]) for r in repeats), default=1)
    legend = [(r["label"], PALETTE[i % len(PALETTE)], "", "line") for i, r in enumerate(repeats)]
    panels, notes = [], []
    rss_text, heap_text = _growth_text(s, "growth_per_iter", "verdict"), _growth_text(s, "heap_growth_per_iter",
                                                                                        "heap_verdict")
    if rss_text:
        notes.append(f"RSS {rss_text}")
    if heap_text:
        notes.append(f"heap {heap_text}")
    if s.get("growth_kind"):
        notes.append(f"what grew: {s['growth_kind']}")
    floors = {}
    for name, series_key, base_key, floor_key, warm_key in (("RSS", "rss", "baseline", "floor", "warmup"),
                                                            ("heap", "heap", "heap_baseline", "heap_floor",
                                                             "heap_warmup")):
        drawn = [r for r in repeats if r[series_key]]
        if not drawn:
            continue
        floor = s.get(floor_key)
        floor = floor if _finite(floor) and floor > 0 else None
        floors[name] = floor
        lines, refs, warm = [], [], []
        for i, r in enumerate(repeats):
            if not r[series_key]:
                continue
            colour = PALETTE[i % len(PALETTE)]
            lines.append((r["label"], colour, [(k, v / MIB) for k, v in decimate(r[series_key])]))
            base, length = r[base_key], len(r[series_key])
            if _finite(base):
                refs.append(("baseline", [(0, base / MIB), (length, base / MIB)]))
                if floor:
                    refs.append(("floor", [(0, base / MIB), (length, (base + floor * length) / MIB)]))
            if r[warm_key]:
                warm.append(r[warm_key])
        values = [y for _, _, pts in lines for _, y in pts] + [y for _, pts in refs for _, y in pts]
        panels.append({"name": name, "label": f"{name} (MiB)", "lines": lines, "refs": refs, "warmup": warm,
                       "ticks": _span_ticks(values, MIN_CURVE_SPAN / MIB)})
    if not any(p["name"] == "heap" for p in panels):
        why = next((r["heap_unavailable"] for r in repeats if r.get("heap_unavailable")), None)
        notes.append("heap: not read" + (f" ({why})" if why else ""))
    if any(ref for p in panels for ref in p["refs"]):
        legend.append(("baseline", REF, BASELINE_DASH, "line"))
    else:
        legend.append(("no baseline reading: not drawn", REF, BASELINE_DASH, "line"))
    floor_text = ", ".join(f"{name} +{floor / KIB:g} KiB/iter" for name, floor in floors.items() if floor)
    missing = [name for name, floor in floors.items() if not floor]
    if floor_text:
        legend.append((f"floor from the baseline: {floor_text}", REF, FLOOR_DASH, "line"))
    if missing:
        legend.append((f"no {' or '.join(missing)} floor in the record: not drawn", REF, FLOOR_DASH, "line"))
    if any(p["warmup"] for p in panels):
        legend.append(("warm-up found (not judged)", WARMUP_FILL, "", "box"))
    return {"title": f"{loop} × {strategy}, TF {version}", "notes": notes, "legend": legend, "panels": panels,
            "xticks": [x for x in _ticks(0, n, integer=True) if x <= n], "xmax": n}


def _span_ticks(values, span, n=5):
    """Ticks of an axis holding `values` and spanning at least `span` around them (noise stays flat)."""
    if not values:
        return _ticks(0.0, span or 1.0, n)
    low, high = min(values), max(values)
    if high - low < span:
        middle = (low + high) / 2
        low, high = middle - span / 2, middle + span / 2
    return _ticks(low, high, n)


def _wrap(text, width, size):
    """`text` in lines that fit `width` pixels at font `size` (broken between words)."""
    lines, current = [], ""
    for word in str(text).split(" "):
        candidate = f"{current} {word}" if current else word
        if current and _width_of(candidate, size) > width:
            lines.append(current)
            current = word
        else:
            current = candidate
    return lines + [current] if current else lines


def _pack(phrases, width, size):
    """Phrases joined by '; ' into as few lines as fit `width`; a phrase is broken only when alone it is too long."""
    lines = []
    for phrase in phrases:
        joined = f"{lines[-1]}; {phrase}" if lines else phrase
        if lines and _width_of(joined, size) <= width:
            lines[-1] = joined
        else:
            lines += _wrap(phrase, width, size)
    return lines


def curve_svg(data, width=420, heights=(150, 90)):
    """A memory picture (curve_data) as SVG: the title, the verdicts, the legend, then the RSS panel over the heap
    panel on one iteration axis."""
    left, right, size = 56, 12, 10
    parts, y = [], 6
    for line in _wrap(data["title"], width - 12, 12):
        y += 15
        parts.append(_text(width / 2, y, line, 12, "middle", INK, "600"))
    y += 2
    for line in _pack(data["notes"], width - 12, size):
        y += 13
        parts.append(_text(width / 2, y, line, size, "middle", MUTED))
    key, key_height = _legend(data["legend"], left, y + 6, width - left - right, size)
    parts.append(key)
    y += 6 + key_height
    xt = data["xticks"]
    px = _scale(0, data["xmax"], left, width - right)
    for index, panel in enumerate(data["panels"]):
        height = heights[min(index, len(heights) - 1)]
        last = index == len(data["panels"]) - 1
        parts.append(_panel(panel, px, xt, left, width - right, y + 4, y + 4 + height, last))
        y += 4 + height + (30 if last else 8)
    body = "".join(parts)
    return "".join(_svg(width, y + 2, f"{data['title']}: memory after each iteration", "plot curve")) + body + "</svg>"


def _panel(panel, px, xt, left, right, top, bottom, last):
    yt = panel["ticks"]
    py = _scale(yt[0], yt[-1], bottom, top)
    out = [f'<g class="panel" data-series="{esc(panel["name"])}">']
    for x0 in panel["warmup"]:
        out.append(f'<rect class="warmup" x="{px(0):.1f}" y="{top:.1f}" width="{px(x0) - px(0):.1f}" '
                   f'height="{bottom - top:.1f}" fill="{WARMUP_FILL}" fill-opacity="{WARMUP_OPACITY}"/>')
    for v in yt:
        out.append(_line(left, py(v), right, py(v), GRID) + _text(left - 4, py(v) + 3.5, _num(v), 9, "end"))
    for v in xt:
        out.append(_line(px(v), bottom, px(v), bottom + 3, FRAME))
        if last:
            out.append(_text(px(v), bottom + 13, _num(v), 9, "middle"))
    if last:
        out.append(_text((left + right) / 2, bottom + 25, "iteration (0: the baseline reading)", 9, "middle"))
    out.append(f'<text transform="translate({left - 40:.0f} {(top + bottom) / 2:.1f}) rotate(-90)" font-size="10" '
               f'fill="{INK}" text-anchor="middle">{esc(panel["label"])}</text>')
    for kind, pts in panel["refs"]:
        (x0, y0), (x1, y1) = pts
        out.append(_line(px(x0), py(y0), px(x1), py(y1), REF, 1.3 if kind == "floor" else 1.1,
                         FLOOR_DASH if kind == "floor" else BASELINE_DASH, kind))
    cls = "line" if panel["name"] == "RSS" else "heap"
    for label, colour, pts in panel["lines"]:
        out.append(f'<g class="{cls}" data-name="{esc(label)}"><title>{esc(panel["name"])}, {esc(label)}</title>'
                   + _polyline([(px(x), py(v)) for x, v in pts], colour, 1.6)
                   + (f'<circle cx="{px(pts[0][0]):.1f}" cy="{py(pts[0][1]):.1f}" r="2" fill="{colour}"/>'
                      if len(pts) == 1 else "") + "</g>")
    out.append(f'<rect x="{left}" y="{top:.1f}" width="{right - left:.1f}" height="{bottom - top:.1f}" fill="none" '
               f'stroke="{FRAME}"/></g>')
    return "".join(out)


# ---------------------------------------------------------------- a metric: across versions, or side by side


def _point(metric, record):
    """(value, CI low, CI high, floor) of a metric in a record's summary, scaled to the view's unit; None where not
    measured."""
    if record is None or record["status"] != "ok":
        return None
    s, view = record["summary"], metric.report
    value = s.get(metric.name)
    if not _finite(value):
        return None
    ci, floor_key = _ci_keys(metric.name), _floor_key(metric.name)
    low = high = None
    if ci and _finite(s.get(ci[0])) and _finite(s.get(ci[1])):
        low, high = s[ci[0]] / view.scale, s[ci[1]] / view.scale
    floor = s.get(floor_key) if floor_key else None
    return value / view.scale, low, high, floor / view.scale if _finite(floor) and floor > 0 else None


def plot(lines: Sequence[tuple], xticks: Sequence[Tuple[float, str]], ylabel: str, title: str, width: int = 460,
         height: int = 260, span: float = 0.0, whiskers: bool = False) -> str:
    """An SVG line plot with its legend inside, on the right. lines: [(name, colour, dash, [(x, y or None[, low,
    high])])]; None breaks the line; low and high draw a whisker (a 95% CI) where given.

    The y axis covers at least `span` around the data, so noise-sized differences stay flat lines. With whiskers,
    each line is nudged sideways a little so overlapping intervals stay apart.
    """
    key_w = max([_width_of(name, 10) for name, *_ in lines] + [0]) + 34
    total = width + key_w
    left, right, top, bottom = 58, 12, 26, 34
    height = max(height, top + 20 + 16 * (len(lines) + (1 if whiskers else 0)))
    ys = [v for _, _, _, pts in lines for p in pts for v in p[1:] if v is not None]
    yt = _span_ticks(ys, span)
    xs = [x for x, _ in xticks]
    x0, x1 = min(xs, default=0) - 0.5, max(xs, default=0) + 0.5  # categories: half a step of room at both ends
    px, py = _scale(x0, x1, left, width - right), _scale(yt[0], yt[-1], height - bottom, top)
    nudge = (lambda i: (i - (len(lines) - 1) / 2) * min(0.3 / max(len(lines) - 1, 1), 0.05)) if whiskers else \
        (lambda i: 0.0)
    out = _svg(total, height, title) + [_text(width / 2, 16, title, 12, "middle", INK, "600")]
    for y in yt:
        out.append(_line(left, py(y), width - right, py(y), GRID) + _text(left - 4, py(y) + 3.5, _num(y), 9, "end"))
    for x, label in xticks:
        out.append(_text(px(x), height - bottom + 14, label, 10, "middle"))
    out.append(f'<text transform="translate(14 {(top + height - bottom) / 2:.0f}) rotate(-90)" font-size="10" '
               f'fill="{INK}" text-anchor="middle">{esc(ylabel)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{height - top - bottom}" '
               f'fill="none" stroke="{FRAME}"/>')
    for i, (name, colour, dash, pts) in enumerate(lines):
        segments, current = [], []
        for p in list(pts) + [(None, None)]:
            if p[1] is None:
                if current:
                    segments.append(current)
                current = []
            else:
                current.append((px(p[0] + nudge(i)), py(p[1])))
        out.append(f'<g class="line" data-name="{esc(name)}"><title>{esc(name)}</title>')
        for p in pts:
            if len(p) > 3 and p[1] is not None and p[2] is not None and p[3] is not None:
                out.append(_whisker(px(p[0] + nudge(i)), py(p[2]), py(p[3]), colour, vertical=True))
        for seg in segments:
            out.append(_polyline(seg, colour, 2, dash))
            out += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{colour}"/>' for a, b in seg]
        out.append("</g>")
    items = [(name, colour, dash, "line") for name, colour, dash, _ in lines]
    if whiskers:
        items.append(("95% CI", MUTED, "", "whisker"))
    key = _legend_column(items, width + 4, top)
    out.append(key + "</svg>")
    return "".join(out)


def _legend_column(items, x, y, size=10):
    """A legend as one column (the version plot's right margin)."""
    parts = []
    for i, item in enumerate(items):
        g, _ = _legend([item], x, y + i * 16, 10 ** 6, size)
        parts.append(g)
    return "".join(parts)


def _version_plot(metric, loop, strategies, versions, groups):
    view, lines, whiskers = metric.report, [], False
    for i, s in enumerate(strategies):
        pts = []
        for x, ver in enumerate(versions):
            point = _point(metric, _record(groups, ver, loop, s))
            pts.append((x, None) if point is None else (x, *point[:3]))
            whiskers = whiskers or (point is not None and point[1] is not None)
        lines.append((s, *_style(i), pts))
    span = (rule.DEFAULT_FLOOR if view.log else view.span) / view.scale  # growth: the default floor
    return plot(lines, list(enumerate(versions)), view.unit, f"{loop}: {view.title} by TF version", span=span,
                whiskers=whiskers)


def chart_data(metric, loop, strategies, versions, groups):
    """A metric of one loop shape, strategies side by side: a row per strategy, a dot per TF version with its 95%
    CI where the summary has one, and the floor of the verdict (growth metrics) as a band from 0."""
    view = metric.report
    rows = []
    for s in strategies:
        row = []
        for j, ver in enumerate(versions):
            record = _record(groups, ver, loop, s)
            point = _point(metric, record)
            status = "n/a" if record is None or record["status"] == "skipped" else (
                "failed" if record["status"] != "ok" else "n/a")
            row.append({"version": ver, "colour": PALETTE[j % len(PALETTE)],
                        "value": None if point is None else point[0], "low": point and point[1],
                        "high": point and point[2], "floor": point and point[3], "status": status,
                        "text": "" if point is None else view.text(point[0] * view.scale)})
        rows.append((s, row))
    values = [v for _, row in rows for p in row for v in (p["value"], p["low"], p["high"], p["floor"])
              if v is not None] + [0.0]
    span = (rule.DEFAULT_FLOOR if view.log else view.span) / view.scale
    return {"title": f"{loop}: {view.title}" + (f", TF {versions[0]}" if len(versions) == 1 else ""),
            "unit": view.unit, "rows": rows, "versions": list(versions), "metric": metric.name,
            "whiskers": any(p["low"] is not None for _, row in rows for p in row),
            "floors": any(p["floor"] for _, row in rows for p in row),
            "ticks": _ticks(*_stretch(min(values), max(values), span))}


def _stretch(low, high, span):
    """[low, high] widened to at least `span`: upwards from 0 or above, downwards from 0 or below, else both ways."""
    if high - low >= span:
        return low, high
    if low >= 0:
        return low, low + span
    if high <= 0:
        return high - span, high
    middle = (low + high) / 2
    return middle - span / 2, middle + span / 2


def chart_svg(data, plot_width=300):
    """Strategies side by side (chart_data) as SVG: strategy names on the left, the values on the right."""
    size = 10
    label_w = max([_width_of(s, size) for s, _ in data["rows"]] + [60]) + 10
    value_w = max([_width_of(p["text"] or p["status"], size) for _, row in data["rows"] for p in row] + [30]) + 18
    left, width = label_w, label_w + plot_width + value_w
    per = len(data["versions"])
    band = max(18, 12 * per + 6)
    parts = [_text(width / 2, 17, data["title"], 12, "middle", INK, "600")]
    items = []
    if per > 1:
        items += [(f"TF {v}", PALETTE[j % len(PALETTE)], "", "line") for j, v in enumerate(data["versions"])]
    if data["whiskers"]:
        items.append(("95% CI", MUTED, "", "whisker"))
    if data["floors"]:
        items.append(("floor: growth the verdict cannot resolve", "#d9d9d9", "", "box"))
    top = 26
    if items:
        key, h = _legend(items, 8, top, width - 16, size)
        parts.append(key)
        top += h + 2
    xt = data["ticks"]
    right = left + plot_width
    px = _scale(xt[0], xt[-1], left, right)
    bottom = top + band * len(data["rows"])
    for v in xt:
        parts.append(_line(px(v), top, px(v), bottom, GRID) + _text(px(v), bottom + 13, _num(v), 9, "middle"))
    if xt[0] < 0 < xt[-1] or xt[0] == 0:
        parts.append(_line(px(0), top, px(0), bottom, FRAME, 1))
    for r, (strategy, row) in enumerate(data["rows"]):
        y0 = top + r * band
        if r % 2:
            parts.append(f'<rect x="0" y="{y0:.1f}" width="{width}" height="{band}" fill="#f6f6f6"/>')
        parts.append(f'<g class="row" data-strategy="{esc(strategy)}">')
        parts.append(_text(left - 6, y0 + band / 2 + 3.5, strategy, size, "end", INK))
        for j, p in enumerate(row):
            y = y0 + band / 2 + (j - (per - 1) / 2) * 12
            if p["floor"]:
                parts.append(f'<rect class="floor" x="{px(0):.1f}" y="{y - 5:.1f}" '
                             f'width="{max(px(p["floor"]) - px(0), 1):.1f}" height="10" fill="#d9d9d9"/>')
            if p["value"] is None:
                parts.append(_text(left + 4, y + 3.5, p["status"], 9, fill="#888"))
                continue
            if p["low"] is not None and p["high"] is not None:
                parts.append(_whisker(y, px(p["low"]), px(p["high"]), p["colour"], vertical=False))
            parts.append(f'<circle class="value" cx="{px(p["value"]):.1f}" cy="{y:.1f}" r="3.5" fill="{p["colour"]}">'
                         f'<title>{esc(strategy)}, TF {esc(p["version"])}: {esc(p["text"])} {esc(data["unit"])}'
                         f'</title></circle>')
            parts.append(_text(right + 6, y + 3.5, p["text"], size, fill=p["colour"] if per > 1 else INK))
        parts.append("</g>")
    parts.append(f'<rect x="{left}" y="{top}" width="{plot_width}" height="{bottom - top}" fill="none" '
                 f'stroke="{FRAME}"/>')
    parts.append(_text((left + right) / 2, bottom + 27, data["unit"], 10, "middle", INK))
    height = bottom + 34
    return "".join(_svg(width, height, data["title"], "plot chart")) + "".join(parts) + "</svg>"


def _strategy_chart(metric, loop, strategies, versions, groups):
    return chart_svg(chart_data(metric, loop, strategies, versions, groups))


def _curve(record, loop, strategy, version, element_id):
    """The RSS and heap picture of one cell, repeats overlaid, with the numbers it summarizes."""
    svg = curve_svg(curve_data(record, loop, strategy, version))
    s = record["summary"]
    facts = [f"status {record['status']}" + (f": {record.get('reason')}" if record.get("reason") else "")]
    if s.get("measured"):
        facts.append(f"{', '.join(map(str, s['measured']))} iterations measured ({', '.join(s.get('stopped') or [])})"
                     f", the first {', '.join(map(str, s.get('warmup_found') or []))} discarded as warm-up")
    if s.get("why"):
        facts.append(f"not decided: {s['why']}")
    if s.get("peak_loop") is not None:
        facts.append(f"peak {s['peak_loop'] / MIB:.1f} MiB")
    if s.get("retained") is not None:
        facts.append(f"retained after cleanup {s['retained'] / MIB:+.1f} MiB")
    functions = _functions_table(record)
    more = f"<details><summary>tf.function traces</summary>{functions}</details>" if functions else ""
    return (f'<figure class="curve" id="{element_id}">{svg}'
            f'<figcaption>{esc("; ".join(facts))}</figcaption>{more}</figure>')


def curves_html(records: Sequence[Record], limit: int = 12, width: int = 420) -> str:
    """The memory pictures of up to `limit` records (a notebook's Results), in a row that wraps."""
    drawn = [r for r in records if _repeats(r)]
    figures = "".join(
        f'<div style="display:inline-block;vertical-align:top;margin:0 8px 8px 0">'
        f'{curve_svg(curve_data(r, r["loop"], r["strategy"], _version_of(r)), width=width)}</div>'
        for r in drawn[:limit])
    more = (f"<div>{len(drawn) - limit} more record(s) not drawn (kerasbench report draws every one).</div>"
            if len(drawn) > limit else "")
    return f'<div class="kerasbench-curves">{figures}</div>{more}' if figures else ""


def _version_of(record):
    return str((record.get("environment") or {}).get("tensorflow") or "?")


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
    draw = _version_plot if len(versions) > 1 else _strategy_chart  # one release: strategies side by side
    plots = "".join(f"<div>{draw(m, loop, strategies, versions, groups)}</div>" for m in metrics)
    traces = "".join(_trace(r, loop, s, ver) for s in strategies for ver in versions
                     for r in [_record(groups, ver, loop, s)] if r is not None and record_trace(r))
    return (f'<section class="loop" id="loop-{esc(loop)}" data-loop="{esc(loop)}"><h2>{esc(loop)}</h2>'
            f'<div class="tables">{tables}</div><div class="plots">{plots}</div>'
            f'<h3>Memory after each iteration</h3><p class="hint">A cell of a table marks its pair\'s picture here '
            f'(click it).</p><div class="curves">{"".join(figures)}</div>{traces}</section>')


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
.tables,.plots,.curves{display:flex;flex-wrap:wrap;align-items:flex-start}.plots>div{margin:0 1em 1em 0}
.hint{color:#777;font-style:italic;margin:.2em 0 .6em}svg.plot{display:block}
figure.curve{margin:0 12px 14px 0;padding:4px;width:420px;border:1px solid #eee;border-radius:4px}
figure.curve.sel{outline:3px solid #222}figure.curve figcaption{font-size:12px;color:#333;margin:4px 2px 0}
figure.curve details{font-size:12px;margin:4px 2px 0}figure.curve table.functions{font-size:11px;margin:4px 0 0}
figure.curve table.functions td{white-space:normal}
table.env td{white-space:normal;font-size:12px;vertical-align:top}
"""

JS = """
document.querySelectorAll('td[data-curve]').forEach(function (td) {
  function show() {
    var section = td.closest('section'), figure = document.getElementById(td.dataset.curve);
    section.querySelectorAll('.sel').forEach(function (c) { c.classList.remove('sel'); });
    section.querySelectorAll('td[data-curve="' + td.dataset.curve + '"]')
      .forEach(function (c) { c.classList.add('sel'); });
    if (figure) { figure.classList.add('sel'); figure.scrollIntoView({block: 'nearest'}); }
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
    "and every cell's tooltip says why. n/a means the pair was not measured or does not apply, failed means the "
    "worker failed or was stopped, with the reason in the tooltip. Below the tables, each metric against the TF "
    "version (one release: the strategies side by side), with the 95% confidence interval of a growth as "
    "whiskers; then every pair's memory after each iteration (a click on a cell marks its own): RSS above, the "
    "heap below, in MiB, one line per repeat (fresh process), the baseline reading dashed, the floor dotted (a "
    "line from the baseline rising at the slope the verdict cannot tell from noise: a series that stays under it "
    "is flat to the verdict), the warm-up the verdict discarded shaded. Every y axis spans at least 4 MiB, so "
    "noise draws flat."
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


# ---------------------------------------------------------------- one picture: report --svg, --png


def picture(paths: Sequence[str], pair: Optional[str] = None, metric: Optional[str] = None,
            loop: Optional[str] = None, version: Optional[str] = None,
            baseline: Optional[str] = None, rejudge: bool = False) -> Tuple[str, dict, str]:
    """The one picture of `report --svg/--png`: ("curve", curve_data, what) of a pair (LOOP:STRATEGY; its record of
    `version`, default the newest with a series), or ("chart", chart_data, what) of a metric of a loop shape, the
    strategies side by side (every version, or `version`'s). Unknown names: UsageError listing the valid ones."""
    groups = compare.group(compare.load(paths), rejudge)
    versions = sorted(groups, key=version_key)
    compare.pick_baseline(versions, baseline)  # the page's check of --baseline, so both refuse the same
    if version is not None and version not in versions:
        raise unknown("TF version", version, versions)
    pairs = sorted({p for g in groups.values() for p in g}, key=compare.pair_order)
    names = [f"{lp}:{s}" for lp, s in pairs]
    records = [r for g in groups.values() for r, _ in g.values()]
    metrics = {m.name: m for m in shown(records)}
    if pair is not None and metric is not None:
        raise UsageError("--pair draws a pair's memory, --metric a metric of every strategy: give one of them.")
    if pair is None and metric is None:
        if len(pairs) != 1:
            raise UsageError(f"Which picture? Give --pair LOOP:STRATEGY, its memory after each iteration (one of: "
                             f"{', '.join(names)}), or --metric NAME, the strategies side by side (one of: "
                             f"{', '.join(metrics)}).")
        pair = names[0]
    if pair is not None:
        if loop is not None:
            raise UsageError("--loop goes with --metric; --pair LOOP:STRATEGY names its loop shape.")
        if pair not in names:
            raise unknown("pair", pair, names)
        loop, strategy = pair.split(":", 1)
        for ver in [version] if version else versions[::-1]:
            record = _record(groups, ver, loop, strategy)
            if record is not None and _repeats(record):
                return "curve", curve_data(record, loop, strategy, ver), f"{loop} × {strategy}, TF {ver}"
        record = _record(groups, version, loop, strategy) if version else None
        why = f" ({record['status']}: {record.get('reason')})" if record else ""
        raise UsageError(f"No memory series to draw for {pair}" + (f" on TF {version}" if version else "")
                         + f"{why}: its worker measured no iteration.")
    if metric not in metrics:
        raise unknown("metric", metric, metrics)
    loops = list(dict.fromkeys(lp for lp, _ in pairs))
    if loop is None and len(loops) > 1:
        raise UsageError(f"--metric draws one loop shape: give --loop, one of: {', '.join(loops)}.")
    loop = loops[0] if loop is None else loop
    if loop not in loops:
        raise unknown("loop", loop, loops)
    strategies = [s for lp, s in pairs if lp == loop]
    chosen = [version] if version else versions
    return ("chart", chart_data(metrics[metric], loop, strategies, chosen, groups),
            f"{metric} of {loop}" + (f" on TF {', '.join(chosen)}" if chosen else ""))


def picture_svg(kind: str, data: dict) -> str:
    """A picture for an issue: a memory curve a little larger than the page's, or the strategies' chart."""
    return curve_svg(data, width=640, heights=(220, 130)) if kind == "curve" else chart_svg(data, plot_width=380)


def _has_matplotlib() -> bool:
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def _chromium() -> Optional[str]:
    import shutil

    return shutil.which("chromium") or shutil.which("chromium-browser")


PNG_NEEDS = ("matplotlib (pip install 'kerasbench[plots]') or chromium on PATH (apt-get install chromium); "
             "--svg writes the picture without either")


def png_renderer() -> str:
    """How a PNG is drawn here: 'matplotlib' where it is installed, else the path of headless chromium; a
    UsageError (exit 2) saying what to install where neither is."""
    if _has_matplotlib():
        return "matplotlib"
    found = _chromium()
    if found:
        return found
    raise UsageError(f"Cannot write a PNG: it needs {PNG_NEEDS}.")


def write_picture(paths: Sequence[str], svg: Optional[str] = None, png: Optional[str] = None,
                  pair: Optional[str] = None, metric: Optional[str] = None, loop: Optional[str] = None,
                  version: Optional[str] = None, baseline: Optional[str] = None, rejudge: bool = False) -> str:
    """Write one picture (`picture`) as SVG and/or PNG, each atomically; returns what it shows."""
    for output in (svg, png):
        if output:
            check_not_input(output, list(paths), "the picture")
    renderer = png_renderer() if png else None  # before the work: what to install, at once
    kind, data, what = picture(paths, pair, metric, loop, version, baseline, rejudge)
    text = picture_svg(kind, data)
    outputs = []
    if svg:
        outputs.append((svg, ('<?xml version="1.0" encoding="UTF-8"?>\n' + text + "\n").encode("utf-8")))
    if png:
        outputs.append((png, _png_matplotlib(kind, data) if renderer == "matplotlib" else _png_chromium(renderer,
                                                                                                     text)))
    for output, data_bytes in outputs:
        try:
            write_text(output, data_bytes, "the picture")
        except OSError as e:
            raise UsageError(f"Cannot write the picture to {output}: {e.strerror}.") from None
    return what


CHROMIUM_SECONDS = 60
SCALE = 2  # device pixels per SVG pixel: a sharp picture in an issue
# Headless chromium (156) paints only the top (height - 87.5) CSS px of a window under 150 px tall, and screenshots
# the whole window: a 138 px chart came out as its title and legend over blank. Every picture is drawn in a window
# at least this tall, and the screenshot cut to the picture's own height.
MIN_WINDOW = 400


def crop_png(data: bytes, height: int) -> bytes:
    """A PNG's top `height` rows (the width kept): its rows' filters read only the row above, so the image data is
    cut unfiltered and compressed again; the other chunks are kept."""
    import struct
    import zlib

    chunks, pos = [], 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunks.append((kind, data[pos + 8:pos + 8 + length]))
        pos += 12 + length
    width, old, depth, colour, compression, filtering, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    if height >= old:
        return data
    if interlace or depth != 8 or colour not in (0, 2, 4, 6):
        raise ValueError(f"cannot cut a PNG of depth {depth}, colour type {colour}, interlace {interlace}")
    stride = 1 + width * {0: 1, 2: 3, 4: 2, 6: 4}[colour]
    pixels = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))[:stride * height]

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    out, placed = [data[:8], chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, colour, compression,
                                                         filtering, interlace))], False
    for kind, body in chunks[1:]:
        if kind == b"IDAT":
            if not placed:
                out.append(chunk(b"IDAT", zlib.compress(pixels, 9)))
                placed = True
        else:
            out.append(chunk(kind, body))
    return b"".join(out)


def _png_chromium(chromium: str, svg: str) -> bytes:
    """The SVG as PNG (SCALE times its size), drawn by headless chromium in a window at least MIN_WINDOW tall, cut to
    the picture's height."""
    import re
    import shutil
    import subprocess
    import tempfile

    from . import procs

    width, height = (int(float(v)) for v in re.search(r'width="([\d.]+)" height="([\d.]+)"', svg).groups())
    folder = tempfile.mkdtemp(prefix="kerasbench-png-")
    try:
        page, shot = os.path.join(folder, "picture.html"), os.path.join(folder, "picture.png")
        with open(page, "w", encoding="utf-8") as f:
            f.write('<!DOCTYPE html><html><head><meta charset="utf-8"><style>html,body{margin:0;background:#fff}'
                    f"svg{{display:block}}</style></head><body>{svg}</body></html>")
        args = [chromium, "--headless", "--disable-gpu", "--hide-scrollbars", "--no-first-run", "--disable-sync",
                "--disable-extensions", "--disable-background-networking", "--disable-component-update",
                f"--user-data-dir={os.path.join(folder, 'profile')}", f"--force-device-scale-factor={SCALE}",
                f"--window-size={width},{max(height, MIN_WINDOW)}", f"--screenshot={shot}", "file://" + page]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # chromium refuses to run as root with its sandbox
        group = procs.start(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _, err = group.proc.communicate(timeout=CHROMIUM_SECONDS)
            err = err.decode(errors="replace")
        except subprocess.TimeoutExpired:
            err = f"no picture after {CHROMIUM_SECONDS} s"
        finally:
            group.end()
        if not os.path.exists(shot) or not os.path.getsize(shot):
            last = (err.strip().splitlines() or ["no output"])[-1]
            raise UsageError(f"Cannot write a PNG: {chromium} drew nothing ({last}); write --svg, or install "
                             "matplotlib (pip install 'kerasbench[plots]').")
        with open(shot, "rb") as f:
            return crop_png(f.read(), height * SCALE)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _mpl_dash(dash):
    return (0, tuple(float(v) / 1.5 for v in dash.split())) if dash else "-"


def _mpl_legend(items):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = []
    for text, colour, dash, kind in items:
        if kind == "box":
            handles.append(Patch(facecolor=colour, alpha=WARMUP_OPACITY * 2 if colour == WARMUP_FILL else 1,
                                 edgecolor=FRAME, label=text))
        elif kind == "whisker":
            handles.append(Line2D([], [], color=colour, marker="|", markersize=8, label=text))
        else:
            handles.append(Line2D([], [], color=colour, linestyle=_mpl_dash(dash), label=text))
    return handles


def _png_matplotlib(kind: str, data: dict) -> bytes:
    """The picture drawn by matplotlib from the same data as the SVG (no pyplot: the user's backend is left alone)."""
    import io

    from matplotlib.figure import Figure

    if kind == "curve":
        panels = data["panels"]
        fig = Figure(figsize=(7.5, 2.0 + 2.1 * len(panels)), layout="constrained")
        axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False,
                            gridspec_kw={"height_ratios": [3, 2][:len(panels)]})[:, 0]
        for ax, panel in zip(axes, panels):
            for x in panel["warmup"]:
                ax.axvspan(0, x, color=WARMUP_FILL, alpha=WARMUP_OPACITY, linewidth=0)
            for ref, pts in panel["refs"]:
                ax.plot(*zip(*pts), color=REF, linewidth=1.2,
                        linestyle=_mpl_dash(FLOOR_DASH if ref == "floor" else BASELINE_DASH))
            for label, colour, pts in panel["lines"]:
                ax.plot(*zip(*pts), color=colour, linewidth=1.6, marker="o" if len(pts) == 1 else None)
            ax.set_ylim(panel["ticks"][0], panel["ticks"][-1])
            ax.set_yticks(panel["ticks"])
            ax.set_ylabel(panel["label"])
            ax.grid(axis="y", color=GRID)
        axes[-1].set_xlim(0, data["xmax"])
        axes[-1].set_xticks(data["xticks"])
        axes[-1].set_xlabel("iteration (0: the baseline reading)")
        fig.legend(handles=_mpl_legend(data["legend"]), loc="outside lower center", ncols=2, fontsize=8,
                   frameon=False)
        fig.suptitle("\n".join([data["title"]] + data["notes"]), fontsize=10)
    else:
        rows, versions = data["rows"], data["versions"]
        per, xt = len(versions), data["ticks"]
        fig = Figure(figsize=(8, 1.6 + 0.3 * len(rows) * max(1.0, 0.6 * per)), layout="constrained")
        ax = fig.subplots()
        for r, (strategy, row) in enumerate(rows):
            if r % 2:
                ax.axhspan(r - 0.5, r + 0.5, color="#f6f6f6", zorder=0, linewidth=0)
            for j, p in enumerate(row):
                y = r + (j - (per - 1) / 2) * min(0.25, 0.8 / per)
                if p["floor"]:
                    ax.barh(y, p["floor"], height=0.2, left=0, color="#d9d9d9", zorder=1)
                if p["value"] is None:
                    ax.text(xt[0], y, f" {p['status']}", va="center", fontsize=8, color="#888")
                    continue
                if p["low"] is not None and p["high"] is not None:
                    err = [[max(p["value"] - p["low"], 0)], [max(p["high"] - p["value"], 0)]]
                    ax.errorbar(p["value"], y, xerr=err, fmt="o", color=p["colour"], capsize=3, markersize=5,
                                zorder=3)
                else:
                    ax.plot(p["value"], y, "o", color=p["colour"], markersize=5, zorder=3)
                ax.annotate(p["text"], xy=(1, y), xycoords=("axes fraction", "data"), xytext=(4, 0),
                            textcoords="offset points", va="center", fontsize=8,
                            color=p["colour"] if per > 1 else INK)
        ax.set_yticks(range(len(rows)), [s for s, _ in rows], fontsize=8)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_xlim(xt[0], xt[-1])
        ax.set_xticks(xt)
        ax.set_xlabel(data["unit"])
        if xt[0] <= 0 <= xt[-1]:
            ax.axvline(0, color=FRAME, linewidth=1)
        ax.grid(axis="x", color=GRID)
        ax.set_axisbelow(True)
        ax.set_title(data["title"], fontsize=10)
        items = [(f"TF {v}", PALETTE[j % len(PALETTE)], "", "line") for j, v in enumerate(versions)] if per > 1 else []
        items += [("95% CI", MUTED, "", "whisker")] if data["whiskers"] else []
        items += [("floor: growth the verdict cannot resolve", "#d9d9d9", "", "box")] if data["floors"] else []
        if items:
            fig.legend(handles=_mpl_legend(items), loc="outside lower center", ncols=min(len(items), 4), fontsize=8,
                       frameon=False)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=150, facecolor="white")
    return buffer.getvalue()


# ---------------------------------------------------------------- writing


def write(paths: Sequence[str], output: str = DEFAULT_OUTPUT, baseline: Optional[str] = None,
          atlas_only: bool = False, rejudge: bool = False) -> str:
    """Build the report (atlas_only: the atlas alone, kerasbench.atlas) and write it atomically to `output` (its
    folder made if missing)."""
    check_not_input(output, list(paths), "the report")
    # input errors raised here, before writing
    text = atlas.build(paths, rejudge) if atlas_only else build(paths, baseline, rejudge)
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
    try:  # the atlas alone, as `kerasbench atlas` writes it (docs/atlas/ is the project's), for two or more versions
        groups = atlas.load(folders)
        if len(groups) >= 2:
            page_path = atlas.write(folders, os.path.join(html_dir, ATLAS_FOLDER), groups)[-1]
            out.write(f"atlas: {page_path} ({len(groups)} TF versions)\n")
    except UsageError as e:
        out.write(f"no atlas: {e}\n")
    return path


ATLAS_FOLDER = "atlas"  # in asv's html folder, beside the report
