"""What each picture shows of the records, and one picture alone (`report --svg/--png`, a notebook's Results).

Data first, from records and compare's groups: a pair's memory after each iteration (curve_data: RSS and heap per
repeat, the baseline, the floor, the warm-up discarded), a metric of one loop shape over TF versions (version_plot)
or the strategies side by side (chart_data); the drawing is kerasbench.draw's, the PNG kerasbench.png's. The inputs,
their checks and the verdicts are `compare`'s own (load, group, pick_baseline), so the page and a picture accept and
refuse the same records.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from . import draw, rule
from .compare.cells import pair_order, pick_baseline
from .compare.groups import group, load
from .errors import UsageError, unknown
from .files import check_not_input, write_text
from .metrics import METRICS, Metric
from .page import finite
from .png import exporter, from_svg
from .record import Record
from .releases import version_key
from .units import MIB, floor_kib

CURVE_POINTS = 400  # the most points a curve draws per line: each bucket's lowest and highest reading
MIN_CURVE_SPAN = 4 * MIB  # a curve's y axis spans at least this: RSS moves by pages and glibc's teeth by MiB


def shown(records: Sequence[Record]) -> List[Metric]:
    """The metrics with a report view (kerasbench.metrics), each optional one (heap, GPU) only when a record has it."""
    return [m for m in METRICS.values() if m.report and (not m.report.optional or any(
        r["summary"].get(m.name) is not None for r in records))]


def record_at(groups, version, loop, strategy):
    """The record of a (loop, strategy) pair on a TF version of compare's groups; None where not measured."""
    return groups[version].get((loop, strategy), (None, None))[0]


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


def decimate(values, limit=CURVE_POINTS):
    """[(iteration, value)] of a series (iteration 1 first), at most `limit` points: every reading when there are
    few, else the lowest and the highest of each of limit/2 buckets, in order, so a spike or a tooth stays drawn."""
    points = [(k + 1, v) for k, v in enumerate(values) if finite(v)]
    if len(points) <= limit:
        return points
    buckets, n, out = limit // 2, len(points), []
    for b in range(buckets):
        chunk = points[b * n // buckets:(b + 1) * n // buckets]
        low, high = min(chunk, key=lambda p: p[1]), max(chunk, key=lambda p: p[1])
        out += sorted({low, high})
    return out


def repeats_of(record):
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
                item[key] = value if finite(value) and value > 0 else None
            judged += 1
        found.append(item)
    return found


def series_of(record):
    """[(label, RSS per iteration)] of every repeat, including a stopped worker's partial curve."""
    return [(r["label"], r["rss"]) for r in repeats_of(record)]


def _growth_text(s, metric, verdict_key):
    value = s.get(metric)
    if not finite(value):
        return None
    view, ci = METRICS[metric].report, _ci_keys(metric)
    text = f"{view.text(value)} KiB/iter"
    if ci and finite(s.get(ci[0])) and finite(s.get(ci[1])):
        text += f" (95% CI {view.text(s[ci[0]])} to {view.text(s[ci[1]])})"
    return text + (f": {s[verdict_key]}" if s.get(verdict_key) else "")


def curve_data(record, loop, strategy, version):
    """What a record's memory picture shows: per panel (RSS, then the heap where read) each repeat's readings in
    MiB (decimated), the baseline reading, the floor (a line from the baseline rising at the floor's slope: the
    growth the verdict could not resolve), the warm-up discarded, and a y range of at least MIN_CURVE_SPAN that
    holds them all, so a series flat within a few hundred KiB draws flat."""
    s, repeats = record.get("summary") or {}, repeats_of(record)
    n = max((len(r["rss"]) for r in repeats), default=1)
    legend = [(r["label"], draw.PALETTE[i % len(draw.PALETTE)], "", "line") for i, r in enumerate(repeats)]
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
        floor = floor if finite(floor) and floor > 0 else None
        floors[name] = floor
        lines, refs, warm = [], [], []
        for i, r in enumerate(repeats):
            if not r[series_key]:
                continue
            colour = draw.PALETTE[i % len(draw.PALETTE)]
            lines.append((r["label"], colour, [(k, v / MIB) for k, v in decimate(r[series_key])]))
            base, length = r[base_key], len(r[series_key])
            if finite(base):
                refs.append(("baseline", [(0, base / MIB), (length, base / MIB)]))
                if floor:
                    refs.append(("floor", [(0, base / MIB), (length, (base + floor * length) / MIB)]))
            if r[warm_key]:
                warm.append(r[warm_key])
        values = [y for _, _, pts in lines for _, y in pts] + [y for _, pts in refs for _, y in pts]
        panels.append({"name": name, "label": f"{name} (MiB)", "lines": lines, "refs": refs, "warmup": warm,
                       "ticks": draw.span_ticks(values, MIN_CURVE_SPAN / MIB)})
    if not any(p["name"] == "heap" for p in panels):
        why = next((r["heap_unavailable"] for r in repeats if r.get("heap_unavailable")), None)
        notes.append("heap: not read" + (f" ({why})" if why else ""))
    if any(ref for p in panels for ref in p["refs"]):
        legend.append(("baseline", draw.REF, draw.BASELINE_DASH, "line"))
    else:
        legend.append(("no baseline reading: not drawn", draw.REF, draw.BASELINE_DASH, "line"))
    floor_text = ", ".join(f"{name} +{floor_kib(floor)} KiB/iter" for name, floor in floors.items() if floor)
    missing = [name for name, floor in floors.items() if not floor]
    if floor_text:
        legend.append((f"floor from the baseline: {floor_text}", draw.REF, draw.FLOOR_DASH, "line"))
    if missing:
        legend.append((f"no {' or '.join(missing)} floor in the record: not drawn", draw.REF, draw.FLOOR_DASH, "line"))
    if any(p["warmup"] for p in panels):
        legend.append(("warm-up found (not judged)", draw.WARMUP_FILL, "", "box"))
    return {"title": f"{loop} × {strategy}, TF {version}", "notes": notes, "legend": legend, "panels": panels,
            "xticks": [x for x in draw.ticks(0, n, integer=True) if x <= n], "xmax": n}


def _point(metric, record):
    """(value, CI low, CI high, floor) of a metric in a record's summary, scaled to the view's unit; None where not
    measured."""
    if record is None or record["status"] != "ok":
        return None
    s, view = record["summary"], metric.report
    value = s.get(metric.name)
    if not finite(value):
        return None
    ci, floor_key = _ci_keys(metric.name), _floor_key(metric.name)
    low = high = None
    if ci and finite(s.get(ci[0])) and finite(s.get(ci[1])):
        low, high = s[ci[0]] / view.scale, s[ci[1]] / view.scale
    floor = s.get(floor_key) if floor_key else None
    return value / view.scale, low, high, floor / view.scale if finite(floor) and floor > 0 else None


def version_plot(metric, loop, strategies, versions, groups):
    view, lines, whiskers = metric.report, [], False
    for i, s in enumerate(strategies):
        pts = []
        for x, ver in enumerate(versions):
            point = _point(metric, record_at(groups, ver, loop, s))
            pts.append((x, None) if point is None else (x, *point[:3]))
            whiskers = whiskers or (point is not None and point[1] is not None)
        lines.append((s, *draw.style(i), pts))
    span = (rule.DEFAULT_FLOOR if view.log else view.span) / view.scale  # growth: the default floor
    return draw.plot(lines, list(enumerate(versions)), view.unit, f"{loop}: {view.title} by TF version", span=span,
                whiskers=whiskers)


def chart_data(metric, loop, strategies, versions, groups):
    """A metric of one loop shape, strategies side by side: a row per strategy, a dot per TF version with its 95%
    CI where the summary has one, and the floor of the verdict (growth metrics) as a band from 0."""
    view = metric.report
    rows = []
    for s in strategies:
        row = []
        for j, ver in enumerate(versions):
            record = record_at(groups, ver, loop, s)
            point = _point(metric, record)
            status = "n/a" if record is None or record["status"] == "skipped" else (
                "failed" if record["status"] != "ok" else "n/a")
            row.append({"version": ver, "colour": draw.PALETTE[j % len(draw.PALETTE)],
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
            "ticks": draw.ticks(*draw.stretch(min(values), max(values), span))}


def strategy_chart(metric, loop, strategies, versions, groups):
    return draw.chart_svg(chart_data(metric, loop, strategies, versions, groups))


def curves_html(records: Sequence[Record], limit: int = 12, width: int = 420) -> str:
    """The memory pictures of up to `limit` records (a notebook's Results), in a row that wraps."""
    from .console import loop_label, strategy_label  # a body's pair named as the table names it

    drawn = [r for r in records if repeats_of(r)]
    figures = "".join(
        f'<div style="display:inline-block;vertical-align:top;margin:0 8px 8px 0">'
        f'{draw.curve_svg(curve_data(r, loop_label(r), strategy_label(r), _version_of(r)), width=width)}</div>'
        for r in drawn[:limit])
    more = (f"<div>{len(drawn) - limit} more record(s) not drawn (kerasbench report draws every one).</div>"
            if len(drawn) > limit else "")
    return f'<div class="kerasbench-curves">{figures}</div>{more}' if figures else ""


def _version_of(record):
    return str((record.get("environment") or {}).get("tensorflow") or "?")


def picture(paths: Sequence[str], pair: Optional[str] = None, metric: Optional[str] = None,
            loop: Optional[str] = None, version: Optional[str] = None,
            baseline: Optional[str] = None, rejudge: bool = False) -> Tuple[str, dict, str]:
    """The one picture of `report --svg/--png`: ("curve", curve_data, what) of a pair (LOOP:STRATEGY; its record of
    `version`, default the newest with a series), or ("chart", chart_data, what) of a metric of a loop shape, the
    strategies side by side (every version, or `version`'s). Unknown names: UsageError listing the valid ones."""
    groups = group(load(paths), rejudge)
    versions = sorted(groups, key=version_key)
    pick_baseline(versions, baseline)  # the page's check of --baseline, so both refuse the same
    if version is not None and version not in versions:
        raise unknown("TF version", version, versions)
    pairs = sorted({p for g in groups.values() for p in g}, key=pair_order)
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
            record = record_at(groups, ver, loop, strategy)
            if record is not None and repeats_of(record):
                return "curve", curve_data(record, loop, strategy, ver), f"{loop} × {strategy}, TF {ver}"
        record = record_at(groups, version, loop, strategy) if version else None
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
    return draw.curve_svg(data, width=640, heights=(220, 130)) if kind == "curve" else draw.chart_svg(data,
                                                                                                     plot_width=380)


def write_picture(paths: Sequence[str], svg: Optional[str] = None, png: Optional[str] = None,
                  pair: Optional[str] = None, metric: Optional[str] = None, loop: Optional[str] = None,
                  version: Optional[str] = None, baseline: Optional[str] = None, rejudge: bool = False) -> str:
    """Write one picture (`picture`) as SVG and/or PNG, each atomically; returns what it shows."""
    for output in (svg, png):
        if output:
            check_not_input(output, list(paths), "the picture")
    chromium = exporter() if png else None  # before the work: what to install, at once
    kind, data, what = picture(paths, pair, metric, loop, version, baseline, rejudge)
    text = picture_svg(kind, data)
    outputs = []
    if svg:
        outputs.append((svg, ('<?xml version="1.0" encoding="UTF-8"?>\n' + text + "\n").encode("utf-8")))
    if png:
        outputs.append((png, from_svg(text, chromium)))
    for output, data_bytes in outputs:
        write_text(output, data_bytes, "the picture")  # a failed write: one line naming it, nothing written
    return what

