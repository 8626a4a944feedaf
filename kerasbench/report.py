"""`kerasbench report`: records of several TF versions as one self-contained, offline HTML page.

`compare` answers "what changed?" one cell at a time; a page answers "where is the memory going?"
at a glance: the atlas first (kerasbench.atlas, two versions or more), then per loop shape a heat-table (strategy ×
TF version) of each metric with a report view in kerasbench.metrics (growth per iteration, loop peak; the GPU peaks
where measured), a line plot of each across versions with the 95% CIs as whiskers (one release: the strategies side
by side), the memory behind every cell (RSS and heap after each iteration, with the baseline and the floor the
verdict was judged against), and what each run ran on. The inputs, their checks and the verdicts are `compare`'s own
(load_records, group, pick_baseline, compare), so both commands accept and refuse the same records. What each
picture shows is kerasbench.pictures', the drawing kerasbench.draw's, the escaping, numbers and frame
kerasbench.page's; the page loads nothing (no CDN, no external script), so it opens from a CI artifact or a cluster
node.
"""

from __future__ import annotations

import math
import os
from typing import List, Optional, Sequence

from . import draw, machine as machines
from .atlas.model import verdict as cell_verdict, verdicts_text
from .atlas.html import section
from .compare.cells import compare as compare_cells, pair_order, pick_baseline
from .compare.groups import group, load
from .compare.render import counts, describe
from .files import check_not_input, make_folder, write_text
from .metrics import Metric
from .page import esc, frame, kib, made_from, no_paths, path_name
from .pictures import curve_data, record_at, series_of, shown, strategy_chart, version_plot
from .tree import place_of
from .trace.records import record_trace
from .releases import version_key
from .units import KIB, MIB, floor_kib

FILENAME = "kerasbench-report.html"
DEFAULT_OUTPUT = os.path.join(".asv", "html", FILENAME)  # beside the asv dashboard of `kerasbench publish`


def _judged(metrics: Sequence[Metric]) -> List[str]:
    """Those shown that compare judges against the baseline (they have a compare rule)."""
    return [m.name for m in metrics if m.compare is not None]


MARKS = {"regressed": "▲", "improved": "▼", "unchanged": "=", "inconclusive": "?", "not comparable": "≠"}


# ---------------------------------------------------------------- the data


def build(paths: Sequence[str], baseline: Optional[str] = None, rejudge: bool = False) -> str:
    """The report page for the records under `paths` (`rejudge`: compare.group's); UsageError (compare's) on bad
    input."""
    groups = group(load(paths), rejudge)
    versions = sorted(groups, key=version_key)
    baseline = pick_baseline(versions, baseline)
    records = [r for g in groups.values() for r, _ in g.values()]
    metrics = shown(records)
    cells = compare_cells(groups, baseline=baseline, metrics=_judged(metrics)) if len(versions) > 1 else []
    verdicts = {(c["loop"], c["strategy"], c["metric"], c["version"]): c for c in cells}
    pairs = sorted({p for g in groups.values() for p in g}, key=pair_order)
    loops = list(dict.fromkeys(loop for loop, _ in pairs))
    curves = {}  # (loop, strategy, version) -> element id of its RSS curve
    sections = [_section(loop, [s for lp, s in pairs if lp == loop], versions, baseline, groups, verdicts, metrics,
                         curves) for loop in loops]
    sections = [section(groups)] + _ablations(groups, versions) + sections  # the map first ('' for one version)
    return _page(paths, groups, versions, baseline, cells, loops, sections)


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
        reason = no_paths(record.get("reason"))
        return f'<td class="{cls}" title="{esc(record["status"])}: {esc(reason)}"{attrs}>{label}</td>'
    s = record["summary"]
    view, value = metric.report, s.get(metric.name)
    if value is None or not math.isfinite(value):
        return f'<td class="na" title="no {esc(view.title.lower())} in this record"{attrs}>n/a</td>'
    tip = [f"{view.title}: {view.text(value)} {view.unit} (TF {version}, {s.get('repeats')} repeat(s))"]
    badge = ""
    if metric.name == "growth_per_iter":  # the run's own verdict is on this metric
        if s.get("growth_ci_low") is not None:
            tip.append(f"95% CI [{view.text(s['growth_ci_low'])}, {view.text(s['growth_ci_high'])}] {view.unit}")
        tip.append(f"verdict {verdicts_text(s)}; RSS floor {floor_kib(s.get('floor'))} KiB/iter")
        badge = f'<span class="run {esc(cell_verdict(s))}">{esc(cell_verdict(s))}</span>'
        if s.get("growth_kind"):  # what grew: the heap says leak or allocator retention
            tip.append(f"what grew: {s['growth_kind']} (heap verdict {s.get('heap_verdict')})")
            badge += f'<span class="run kind {esc(s["growth_kind"])}">{esc(s["growth_kind"])}</span>'
    if metric.name == "heap_growth_per_iter" and s.get("heap_verdict"):
        tip.append(f"heap verdict {s['heap_verdict']} (heap floor {floor_kib(s.get('heap_floor'))} KiB/iter)")
    if metric.name in ("growth_per_iter", "heap_growth_per_iter") and s.get("measured"):
        tip.append(f"measured {', '.join(map(str, s['measured']))} iterations ({', '.join(s.get('stopped') or [])}); "
                   f"warm-up found {', '.join(map(str, s.get('warmup_found') or []))}")
        if s.get("why"):
            tip.append(f"not decided: {no_paths(s['why'])}")
    if verdict:
        tip.append(f"vs TF {baseline}: {verdict['verdict']}: {verdict['why']}")  # tip is escaped below
        if verdict["verdict"] != "n/a":
            badge += f'<span class="cmp {esc(verdict["verdict"])}">{MARKS[verdict["verdict"]]}</span>'
    return (f'<td class="ok" data-value="{value!r}" style="{_shade(metric, value, values)}" '
            f'title="{esc(chr(10).join(tip))}"{attrs}>{view.text(value)}{badge}</td>')


def _table(metric, loop, strategies, versions, baseline, groups, verdicts, curves):
    values = [v for s in strategies for ver in versions
              for r in [record_at(groups, ver, loop, s)] if r and r["status"] == "ok"
              for v in [r["summary"].get(metric.name)] if v is not None and math.isfinite(v)]
    marked = baseline if len(versions) > 1 else None
    head = "".join(f'<th class="ver">{esc(v)}{"<br><small>baseline</small>" if v == marked else ""}</th>'
                   for v in versions)
    rows = []
    for s in strategies:
        tds = []
        for ver in versions:
            tds.append(_cell(metric, record_at(groups, ver, loop, s), ver, baseline,
                             verdicts.get((loop, s, metric.name, ver)), curves.get((loop, s, ver)), values))
        rows.append(f'<tr data-strategy="{esc(s)}"><th class="strategy">{esc(s)}</th>{"".join(tds)}</tr>')
    return (f'<table class="heat" data-metric="{esc(metric.name)}"><caption>{esc(metric.report.title)} '
            f'({esc(metric.report.unit)})</caption>'
            f'<thead><tr><th>strategy \\ TF</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def _curve(record, loop, strategy, version, element_id):
    """The RSS and heap picture of one cell, repeats overlaid, with the numbers it summarizes."""
    svg = draw.curve_svg(curve_data(record, loop, strategy, version))
    s = record["summary"]
    facts = [f"status {record['status']}" + (f": {no_paths(record['reason'])}" if record.get("reason") else "")]
    if s.get("measured"):
        facts.append(f"{', '.join(map(str, s['measured']))} iterations measured ({', '.join(s.get('stopped') or [])})"
                     f", the first {', '.join(map(str, s.get('warmup_found') or []))} discarded as warm-up")
    if s.get("why"):
        facts.append(f"not decided: {no_paths(s['why'])}")
    if s.get("peak_loop") is not None:
        facts.append(f"peak {s['peak_loop'] / MIB:.1f} MiB")
    if s.get("retained") is not None:
        facts.append(f"retained after cleanup {s['retained'] / MIB:+.1f} MiB")
    functions = _functions_table(record)
    more = f"<details><summary>tf.function traces</summary>{functions}</details>" if functions else ""
    return (f'<figure class="curve" id="{element_id}">{svg}'
            f'<figcaption>{esc("; ".join(facts))}</figcaption>{more}</figure>')


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
    return f"{floor_kib(floor)} KiB/iter" + (f" ({no_paths(source)})" if source else "")  # a shared page: no folders


ENV_COLUMNS = (  # heading, what one record says (a run is every record of one TF version)
    ("Keras", _env("keras")), ("numpy", _env("numpy")), ("Python", _env("python")), ("machine", _machine),
    ("device", _device), ("allocator", _allocator), ("profile", _profile), ("floor", _floor),
    ("kerasbench", _env("kerasbench")), ("commit", lambda r, path: place_of(path)[1] or "unknown"),
    ("records", lambda r, path: path_name(os.path.dirname(os.path.abspath(path)))),
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
            r = record_at(groups, ver, loop, s)
            if r is not None and series_of(r):
                curves[(loop, s, ver)] = f"curve-{len(curves)}"
                figures.append(_curve(r, loop, s, ver, curves[(loop, s, ver)]))
    tables = "".join(_table(m, loop, strategies, versions, baseline, groups, verdicts, curves) for m in metrics)
    picture = version_plot if len(versions) > 1 else strategy_chart  # one release: strategies side by side
    plots = "".join(f"<div>{picture(m, loop, strategies, versions, groups)}</div>" for m in metrics)
    traces = "".join(_trace(r, loop, s, ver) for s in strategies for ver in versions
                     for r in [record_at(groups, ver, loop, s)] if r is not None and record_trace(r))
    return (f'<section class="loop" id="loop-{esc(loop)}" data-loop="{esc(loop)}"><h2>{esc(loop)}</h2>'
            f'<div class="tables">{tables}</div><div class="plots">{plots}</div>'
            f'<h3>Memory after each iteration</h3><p class="hint">A cell of a table marks its pair\'s picture here '
            f'(click it).</p><div class="curves">{"".join(figures)}</div>{traces}</section>')


def _trace_sites(rows, unit):
    body = []
    for r in rows:
        kibs, count, stack = kib(r["bytes_per_iter"]), format(r["count_per_iter"], "+.1f"), \
            " ← ".join(r["stack"])
        body.append(f'<tr><td class="num">{esc(kibs)}</td><td class="num">{esc(count)}</td>'
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
    growth, cost = kib(t["python_bytes_per_iter"]), format(t["seconds_in_loop"], ".2f")
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
        key = cell_verdict(r["summary"]) if r["status"] == "ok" else ("n/a" if r["status"] == "skipped" else "failed")
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
        + " (each pair's one verdict, RSS and heap together).",
    ]
    for key in _judged(shown(records)):
        found = counts([c for c in cells if c["metric"] == key])
        if found:
            facts.append(f"<b>{esc(key)} vs TF {esc(baseline)}</b>: {esc(found)}.")
    note = describe(groups).splitlines()[-1]
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
    "The small label is the pair's one verdict, RSS and heap together (grows when either grows against its floor, "
    "flat when both are flat, else inconclusive; the tooltip names each), then what grew; "
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
    nav = " · ".join(f'<a href="#loop-{esc(loop)}">{esc(loop)}</a>' for loop in loops)
    return frame(f"kerasbench report: TF {', '.join(versions)}", CSS, f"""<header><h1>kerasbench report</h1>
<ul class="facts">{_summary(groups, versions, baseline, cells)}</ul>
<p class="read"><b>How to read it.</b> {esc(HOW_TO_READ)}</p>
<p>Loop shapes: {nav}</p></header>
{"".join(sections)}
<h2>Environment per run</h2>{_env_table(groups, versions)}
<p class="read">{made_from(paths)};
`kerasbench compare` on the same records gives every headline metric as a table.</p>
<script>{JS}</script>""")


# ---------------------------------------------------------------- writing


def write(paths: Sequence[str], output: str = DEFAULT_OUTPUT, baseline: Optional[str] = None,
          rejudge: bool = False) -> str:
    """Build the report and write it atomically to `output` (its folder made if missing)."""
    check_not_input(output, list(paths), "the report")
    text = build(paths, baseline, rejudge)  # input errors raised here, before writing
    make_folder(os.path.dirname(os.path.abspath(output)), "the report")
    write_text(output, text, "the report")  # a failed write: one line naming it, nothing written
    return output
