"""The tables of records that run and publish print: the run table (the verdicts, then the figures in tables of
their own; the notes under it: skips, environment, margins, resolutions), the tf.functions that retraced, and the
suite's verdicts (kerasbench publish). Drawn with console's text-table renderer, sparklines and a pair's names."""

import os
import re
import textwrap
from typing import List, Optional, Sequence

from .console import (SPARKS, measured_text, loop_label, pair_label, printable, spark_span, sparkline, strategy_label,
                      text_table)
from .metrics import METRICS
from .record import framework_text
from .units import MIB, floor_kib, kib_text


def _rss_series(record: dict) -> list:
    """The RSS readings of a record's first repeat that has some (a stopped worker's partial ones too), else []."""
    repeats = [r for r in record["repeats"] if r.get("result") or r.get("partial_rss")]
    if not repeats:
        return []
    r = repeats[0]
    return (r["result"]["series"]["rss"] if r.get("result") else r["partial_rss"]) or []


def _rss_sparkline(record: dict, span: float = 0.0) -> str:
    return sparkline(_rss_series(record), span=span)


def margin_lines(records: Sequence[dict]) -> List[str]:
    """'margin: RSS 128, heap 8 KiB/iteration (the default: what counts as growth, at any count; …)', once
    per distinct margin of the records (protocol 9 on; older records hold none)."""
    seen = {}
    for r in records:
        s = r.get("summary") or {}
        if s.get("margin") is None:
            continue
        heap = f", heap {floor_kib(s['heap_margin'])}" if s.get("heap_margin") is not None else ""
        given = str(s.get("margin_source") or "").startswith("given")
        seen[f"margin: RSS {floor_kib(s['margin'])}{heap} KiB/iteration ("
             f"{'given' if given else 'the default'}: what counts as growth, at any count; the resolution below "
             "widens each interval)"] = None
    return list(seen)


def _pair_verdict(record: dict, summary: dict) -> str:
    from .rule.series import pair_verdict

    return pair_verdict(summary) if record["status"] == "ok" else record["status"]


# The record's own columns; each metric with a run column in kerasbench.metrics follows, in registry order. The first
# verdict is the pair's one verdict (rule.pair_verdict: RSS and heap together, what Results.verdicts(), ablate and
# assert_no_growth go by); the RSS and heap verdicts it comes from stand beside it, named.
COLUMNS: tuple = (
    ("loop", lambda r, s: loop_label(r)),
    ("strategy", lambda r, s: strategy_label(r)),
    ("verdict", _pair_verdict),
    ("RSS", lambda r, s: (s.get("verdict") or "n/a") if r["status"] == "ok" else ""),
    ("heap", lambda r, s: (s.get("heap_verdict") or "n/a") if r["status"] == "ok" else ""),
    ("what grew", lambda r, s: (s.get("growth_kind") or "n/a") if r["status"] == "ok" else ""),
    ("measured", lambda r, s: measured_text(r) if r["status"] == "ok" else ""),
    ("RSS per iteration", lambda r, s: _rss_sparkline(r)),  # run tables share one scale: _columns(span=...)
)


def table_span(records: Sequence[dict]) -> float:
    """The one sparkline scale of a run table's rows (spark_span of their RSS series)."""
    return spark_span(_rss_series(r) for r in records)


def _columns(gpu: bool, span: float = 0.0) -> list:
    """(heading, cell text of (record, summary)) of the run table: the metrics' GPU columns only when `gpu`; the
    sparklines on the scale `span` (table_span; 0: each row its own)."""
    own = [(name, (lambda r, s: _rss_sparkline(r, span)) if name == "RSS per iteration" else fn)
           for name, fn in COLUMNS]
    return own + [(m.column.heading, lambda r, s, text=m.column.text: text(s)) for m in METRICS.values()
                  if m.column and (gpu or not m.column.gpu_only)]


RUN_WIDTH = 100  # the characters a line of the run table takes: its figures go to tables of their own below


def _packed(columns: list, records: list, width: int) -> List[list]:
    """The run table's columns as tables of at most `width` characters, each led by the loop and strategy columns:
    the verdict columns (COLUMNS but the sparkline) first, then the sparkline and the figures from a table of their
    own, each packed in order."""
    def wide(column) -> int:
        name, fn = column
        return max([len(name)] + [max(len(line) for line in str(fn(r, r["summary"])).split("\n") or [""])
                                  for r in records]) + 2

    keys = columns[:2]
    tables: List[list] = []
    split = len(COLUMNS) - 1  # the RSS sparkline leads the figures, beside its slope
    for part in (columns[2:split], columns[split:]):
        current, used = None, 0
        for column in part:
            if current is None or used + wide(column) > width:
                current = list(keys)
                used = sum(wide(c) for c in keys)
                tables.append(current)
            current.append(column)
            used += wide(column)
    return tables


def _short_paths(text: str) -> str:
    """Paths in a line made short: under the working folder relative, under the home ~, an installed package's from
    its site-packages on."""
    home, here = os.path.expanduser("~"), os.getcwd()

    def short(match) -> str:
        path = match.group(0)
        if here not in ("", "/") and path.startswith(here + os.sep):
            return os.path.relpath(path, here)
        for marker in ("site-packages/", "dist-packages/"):
            if marker in path:
                return "…/" + marker + path.split(marker, 1)[1]
        return "~" + path[len(home):] if home not in ("", "/") and path.startswith(home + os.sep) else path

    return re.sub(r"(?<![\w~.])/[^\s,;()]+", short, text)


def _rows_text(labels: List[str], total: int) -> str:
    """'every row', or the rows named ('control × a, control × b')."""
    return "every row" if len(labels) == total and total > 1 else ", ".join(labels)


def run_table(records: list, width: int = RUN_WIDTH) -> str:
    """The run table of records, one row each: the verdicts, then the figures in tables of their own so that a line
    fits `width` characters; then the reasons of skips and stops, the environment, margins and resolutions (each
    naming its rows)."""
    span = table_span(records)
    columns = _columns(gpu=any(r["spec"].get("device") == "gpu" for r in records), span=span)
    lines: List[str] = []
    for i, group in enumerate(_packed(columns, records, width)):
        lines += ([""] if i else []) + text_table([name for name, _ in group],
                                                  ([fn(r, r["summary"]) for _, fn in group] for r in records))
    if any(_rss_series(r) for r in records):
        top = span / MIB
        lines.append(f"\nRSS per iteration: each row's rise over its first reading, one scale for every row: "
                     f"{SPARKS[0]} none (or below it) to {SPARKS[-1]} +{top:.1f} MiB")
    notes = [f"{pair_label(r)}: {r['reason']}" for r in records if r["status"] != "ok"]
    if records and records[0]["environment"]:
        env = records[0]["environment"]
        worker = records[0]["spec"].get("python")  # --tf: that release's environment, whether the loop imports TF
        lines.append("\n" + printable(
            f"{framework_text(env)}{f' (worker {_short_paths(worker)})' if worker else ''}, Python {env['python']}, "
            f"numpy {env['numpy']}, "
            f"allocator {records[0]['spec'].get('allocator', 'glibc')} (detected {env['allocator']})", lines=True))
    lines += margin_lines(records)
    what = "resolution" if any(r["summary"].get("margin") is not None for r in records) else "floor"
    for key, series in (("floor", ""), ("heap_floor", "heap ")):
        shown: dict = {}
        for r in records:
            s = r["summary"]
            if s.get(key) is None or (series and not s.get("heap_verdict")):
                continue
            source = s.get(f"{key}_source") or "given"
            shown.setdefault((s[key], source), []).append(pair_label(r))
        total = sum(1 for r in records if r["summary"].get(key) is not None)
        for (floor, source), labels in shown.items():
            lines.append(f"{_rows_text(labels, total)}: {series}{what} {floor_kib(floor)} KiB/iteration, from "
                         f"{printable(_short_paths(source), lines=True)}")
    notes += [f"{pair_label(r)}: not decided: {r['summary']['why']}" for r in records
              if r["status"] == "ok" and r["summary"].get("why")]
    notes += [f"{pair_label(r)}: allocator {r['allocator']['requested']} requested, "
              f"but the worker ran on {r['allocator']['detected']}"
              for r in records if not r.get("allocator", {}).get("matches", True)]
    return "\n".join(lines + [printable(note, lines=True) for note in notes]) + "\n"  # a reason quotes a file's text


def _alive(count) -> str:
    return "?" if count is None else str(count)


def functions_text(records: list, top: int = 3) -> str:
    """The tf.functions that retraced during the measured loop, per pair: the few with most traces (owner, function,
    instances, traces, the instances and concrete functions alive when the loop ended); nothing when no pair
    retraced in its loop."""
    lines = []
    for r in records:
        result = next((rep["result"] for rep in r["repeats"] if rep.get("result")), None)
        series = ((result or {}).get("series") or {}).get("all_traces") or []
        if not result or not result.get("functions") or len(series) < 2 or series[-1] == series[0]:
            continue
        lines.append(f"{pair_label(r)}: {series[-1] - series[0]} traces in the measured loop "
                     f"({result['all_traces']} in all); most traced:")
        lines += [f"  {f['owner']}: {f['function']} — {f['traces']} traces, {f['instances']} instance(s); when "
                  f"the loop ended {_alive(f.get('live'))} alive, {_alive(f['held'])} concrete function(s) alive"
                  for f in result["functions"][:top]]
    head = "\ntf.function traces (every function; `--json` has them all):\n"
    return head + "\n".join(lines) + "\n" if lines else ""


# ---------------------------------------------------------------- the suite's verdicts (kerasbench publish)


def _slope_text(summary: dict) -> str:
    """'+22.0 [+9.0, +30.1]': RSS growth in KiB/iteration with its 95% interval (the run table's figures)."""
    if summary.get("growth_ci_low") is None:
        return kib_text(summary.get("growth_per_iter"))
    return (f"{kib_text(summary.get('growth_per_iter'))} [{kib_text(summary['growth_ci_low'])}, "
            f"{kib_text(summary['growth_ci_high'])}]")


VERDICT_ORDER = {"grows": 0, "inconclusive": 1, "flat": 2}


def suite_verdicts(loaded: Sequence[tuple], width: Optional[int] = RUN_WIDTH) -> List[str]:
    """The verdicts of a suite's records ((record, TF version or None) each), short: one line of
    counts, a table of the pairs that grow or are undecided (loop, strategy, the run table's verdict and what grew,
    RSS KiB/iteration with its 95% interval), the strategies that stay flat per loop, and the pairs that did not run
    here, grouped by their reason."""
    from .rule.series import pair_verdict

    versions = {tf for _, tf in loaded} - {None}

    def loop_of(record: dict, tf: Optional[str]) -> str:  # the TF version where the records hold several
        return loop_label(record) + (f" (TF {tf})" if tf and len(versions) > 1 else "")

    ok = [(r, tf) for r, tf in loaded if r["status"] == "ok"]
    verdicts = [pair_verdict(r["summary"]) for r, _ in ok]
    counts = {v: verdicts.count(v) for v in VERDICT_ORDER if v in verdicts}
    not_run = [r for r, _ in loaded if r["status"] != "ok"]
    said = ", ".join(f"{n} {'grow' if v == 'grows' and n > 1 else v}" for v, n in counts.items())
    lines = [f"verdicts: {len(ok)} pairs measured: {said or 'none'}"
             + (f"; {len(not_run)} did not run" if not_run else "")]
    rows = sorted(((VERDICT_ORDER.get(v, 1), r, tf) for (r, tf), v in zip(ok, verdicts) if v != "flat"),
                  key=lambda t: t[0])
    if rows:  # the run table's verdict and what-grew cells (COLUMNS), then the slope with its interval
        cell = dict(COLUMNS)
        lines += text_table(["loop", "strategy", "verdict", "what grew", "RSS KiB/iteration [95%]"],
                            [[loop_of(r, tf), strategy_label(r), cell["verdict"](r, r["summary"]),
                              cell["what grew"](r, r["summary"]), _slope_text(r["summary"])] for _, r, tf in rows],
                            width)
    flat: dict = {}
    for (r, tf), v in zip(ok, verdicts):
        if v == "flat":
            flat.setdefault(loop_of(r, tf), []).append(strategy_label(r))
    if flat:
        lines.append("stay flat:")
        for loop, names in flat.items():
            lines += textwrap.wrap(f"{loop}: {', '.join(names)}", width or 10 ** 6, initial_indent="  ",
                                   subsequent_indent="    ", break_on_hyphens=False)
    reasons: dict = {}
    for r in not_run:  # grouped by reason: 'strategy NAME needs a GPU: …' said once for every NAME
        reason = str(r["reason"]).replace(f"strategy {r['strategy']} ", "")
        reasons.setdefault((r["status"], _short_paths(reason)), []).append(
            f"{loop_label(r)} × {strategy_label(r)}")
    for (status, reason), pairs in reasons.items():
        shown = ", ".join(pairs[:4]) + (f" and {len(pairs) - 4} more" if len(pairs) > 4 else "")
        lines += textwrap.wrap(f"{status} ({len(pairs)}): {reason}: {shown}", width or 10 ** 6,
                               subsequent_indent="    ", break_on_hyphens=False)
    return lines
