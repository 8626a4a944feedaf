"""What kerasbench prints: progress on stderr, text tables, sparklines, the run table.

One text-table renderer (`text_table`, tabulate's) serves the run table, compare and triage.
"""

import os
import re
import textwrap
import threading
import time
from typing import Iterable, List, Optional, Sequence, TextIO

import tabulate as _tabulate_module

from .metrics import METRICS
from .record import framework_text
from .units import MIB, floor_kib, kib_text

SPARKS = "▁▂▃▄▅▆▇█"


NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[%x]?")  # 12, +0.5, 1e-3, 37%, 1.20x
MISSING = ("", "n/a")


# What a terminal acts on rather than shows: the C0 controls but tab and newline (ESC starts an escape sequence, CR
# overwrites the line, BS erases), DEL, the C1 controls (CSI, 0x9b, is ESC [ on some terminals) and the Unicode
# direction overrides (text shown in another order than it is). `lines` escapes tab and newline too.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_LINES = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text, lines: bool = False) -> str:
    """`text` (a record's loop, strategy or version name, a reason, a file name: strings from files are data) as it
    may reach a terminal: every control character written as its Python escape (ESC as \\x1b, CR as \\r), so
    that it is shown, not obeyed; with `lines`, a newline and a tab too (a name that must stay on its line)."""
    text = str(text)
    return (_CONTROL_LINES if lines else _CONTROL).sub(lambda m: repr(m[0])[1:-1], text)


class Printable:
    """A text stream whose writes go through `printable`: the CLI's stdout (kerasbench.cli.main), so that no
    string of a file reaches the terminal as a control sequence, whichever command prints it. Everything else is
    the wrapped stream's."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(printable(text))

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


def _cells(header: Sequence[str], rows: Iterable[Sequence[str]]) -> tuple:
    """The header and rows as text (printable: a record's names are data), and each column's alignment: right where
    every cell that is not missing is a number (tabulate's own number parsing is off: it would print "+1.50" as
    "1.5"), else left."""
    rows = [[printable(cell) for cell in row] for row in rows]
    header = [printable(name) for name in header]
    columns = [[row[i] for row in rows if row[i] not in MISSING] for i in range(len(header))]
    align = ["right" if column and all(NUMBER.fullmatch(cell) for cell in column) else "left" for column in columns]
    return list(header), rows, align


_PADDING = threading.Lock()


def _tabulate(header: Sequence[str], rows: Iterable[Sequence[str]], fmt: str, width: Optional[int] = None) -> list:
    header, rows, align = _cells(header, rows)
    if width and rows:
        over = max(len(line) for line in _tabulate(header, rows, fmt)) - width
        if over > 0:  # the widest columns wrap onto lines of their own, each no narrower than MIN_WRAP
            widths = [max(len(str(cell)) for cell in [name] + [row[i] for row in rows])
                      for i, name in enumerate(header)]
            for i in sorted(range(len(widths)), key=lambda i: -widths[i]):
                cut = min(over, widths[i] - max(MIN_WRAP, len(header[i])))
                if cut > 0:
                    widths[i] -= cut
                    over -= cut
            rows = [[_wrap(str(cell), w) if len(str(cell)) > w else cell for cell, w in zip(row, widths)]
                    for row in rows]
            return _tabulate(header, rows, fmt)
    with _PADDING:  # tabulate widens a column whose header is its widest cell by MIN_PADDING (a module setting, 2):
        # the run table's 25 columns came out ~40 characters wider than the cells need; 0 while drawing ours
        padding, _tabulate_module.MIN_PADDING = _tabulate_module.MIN_PADDING, 0
        try:
            text = _tabulate_module.tabulate(rows, headers=header, tablefmt=fmt, colalign=align,
                                             disable_numparse=True, preserve_whitespace=True)
        finally:
            _tabulate_module.MIN_PADDING = padding
    return [line.rstrip() for line in text.split("\n")]


MIN_WRAP = 16  # the narrowest a wrapped column is made, whatever the terminal


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False)) or text


def text_table(header: Sequence[str], rows: Iterable[Sequence[str]], width: Optional[int] = None) -> list:
    """Lines of a plain-text table (tabulate's "simple"): a dashed rule under the header, numbers right-aligned.
    `width`: the characters a line may take (terminal_width); a wider table wraps its widest columns."""
    return _tabulate(header, rows, "simple", width)


def terminal_width(stream: TextIO, wide: bool = False) -> Optional[int]:
    """The width a table printed on `stream` must fit: $COLUMNS when set, else the terminal's when `stream` is one;
    None (any width) for a pipe or file without $COLUMNS, or when `wide` (--wide)."""
    if wide:
        return None
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(stream.fileno()).columns if stream.isatty() else None
    except (AttributeError, OSError, ValueError):  # a StringIO, a closed or redirected stream
        return None


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list:
    """Lines of a markdown table (tabulate's "pipe"): numbers right-aligned; a `|` inside a cell is escaped."""
    return _tabulate([_escape(cell) for cell in header], ([_escape(cell) for cell in row] for row in rows), "pipe")


def _escape(cell) -> str:
    return str(cell).replace("|", "\\|")


SPARK_MIN_SPAN = 8 * MIB  # the smallest top of a sparkline's scale: RSS moves by pages and glibc's teeth by MiB


def sparkline(values: Sequence[float], width: int = 16, span: float = 0.0) -> str:
    """The shape of a series of bytes in one line of block characters: its rise over its first reading, the top
    block `span` bytes (the rows of one table share one, so that a flat row draws flat beside a growing one), or
    the series' own rise where no span is given, never less than SPARK_MIN_SPAN (a 0.8 MiB band is not a climb).
    Readings under the first draw the lowest block."""
    if not values:
        return "n/a"
    step = max(1, -(-len(values) // width))
    points = [max(values[i : i + step]) for i in range(0, len(values), step)]
    top = span or spark_span([values])
    top_block = len(SPARKS) - 1
    return "".join(SPARKS[min(top_block, max(0, int((v - values[0]) / top * top_block)))] for v in points)


def spark_span(series: Iterable[Sequence[float]]) -> float:
    """The one scale of several sparklines: the largest rise of any series over its first reading, at least
    SPARK_MIN_SPAN."""
    rises = [max(values) - values[0] for values in series if values]
    return max([SPARK_MIN_SPAN] + rises)


class Progress:
    """The status line of (loop, strategy) pairs being measured: redrawn in place on a terminal, else a line a phase.

    With several pairs at once (`pair`), each has a Progress of its own writing whole labelled lines (no redraw,
    so two pairs never overwrite each other's line), through one lock. `at_most`: the total is a bound (triage's
    steps: a bisection may end sooner), said as '≤N' and its estimate as the most left.
    """

    def __init__(self, stream: TextIO, total_pairs: int, warmup: int, concurrent: bool = False,
                 clock=time.monotonic, at_most: bool = False):
        self.stream, self.total, self.warmup, self.concurrent = stream, total_pairs, warmup, concurrent
        self.at_most = at_most
        self.label = ""
        self.iterations = 0
        self._lock = threading.Lock()
        self._clock, self._root = clock, self  # the run's Progress counts the pairs done and the time since it began
        self.started, self.finished = clock(), 0
        self.body = ""  # a measured body's spec.body: its pairs are labelled as the table names them (pair_labels)

    def pair(self, index: int, loop: str, strategy: str, iterations: int, budget: float = 0.0) -> "Progress":
        """The Progress of one of several pairs measured at once: the same stream, whole lines only."""
        mine = Progress(self.stream, self.total, self.warmup, concurrent=True, clock=self._clock)
        mine._lock, mine._root, mine.body = self._lock, self._root, self.body
        mine.start(index, loop, strategy, iterations, budget)
        return mine

    def status(self) -> str:
        """'2 of 58 done, 0:45 elapsed, ~21:30 left': the run's pairs done (the label's [i/N] is a pair's place in the
        run, not a count), its time, and the rest at the pace of the pairs done so far (none before the first);
        '2 of ≤5 done, 1:30 elapsed, ≤~2:15 left' where the total is a bound (at_most)."""
        root = self._root
        bound = "≤" if root.at_most else ""
        elapsed = self._clock() - root.started
        text = f"{root.finished} of {bound}{root.total} done, {clock_text(elapsed)} elapsed"
        if 0 < root.finished < root.total:
            text += f", {bound}~{clock_text(elapsed / root.finished * (root.total - root.finished))} left"
        return text

    def _show(self, text: str, final: bool = False, milestone: bool = False) -> None:
        with self._lock:
            if self.concurrent:  # several pairs share the stream: milestones as whole lines, nothing redrawn
                if final or milestone:
                    self.stream.write(printable(text, lines=True) + "\n")
                    self.stream.flush()
            else:
                status_line(self.stream, text, final=final, milestone=milestone)

    def start(self, index: int, loop: str, strategy: str, iterations: int, budget: float = 0.0) -> None:
        """A new pair (the `index`-th of the total): its label; the runner says when a worker starts. `budget`: the
        seconds of loop of a budgeted run, whose `iterations` are its most."""
        self.iterations, self.budget = iterations, budget
        self.label = f"[{index}/{self.total}] {' × '.join(pair_labels(loop, strategy, self.body))}"

    def __call__(self, ev: dict) -> None:
        """A worker's event: its start, a warm-up or measured iteration."""
        kind = ev["event"]
        if kind == "start":
            repeat = f" r{ev['repeat'] + 1}" if ev["repeat"] else ""
            self._show(f"{self.label}{repeat}: starting a fresh worker ({self.status()})", milestone=True)
        elif kind == "warmup":
            text = f"{self.label} r{ev['repeat'] + 1}: warm-up {ev['iteration'] + 1}/{self.warmup}"
            self._show(text, milestone=ev["iteration"] == 0)
        elif kind == "iteration":
            k = ev["iteration"] + 1
            rss = f"  rss {ev['rss'] / MIB:.0f} MiB" if "rss" in ev else ""
            of = f" (≤ {self.budget:g} s, ≤ {self.iterations})" if self.budget else f"/{self.iterations}"
            text = f"{self.label} r{ev['repeat'] + 1}: iteration {k}{of}{rss}"
            self._show(text, milestone=k == 1 or k == self.iterations or
                       (not self.budget and k % max(1, self.iterations // 4) == 0))
        elif kind == "look":  # a budgeted run's look (the sequential rule): a line each, they are few
            k = ev["iteration"] + 1
            said = "decided: stopping" if ev.get("decided") else "not decided yet"
            self._show(f"{self.label} r{ev['repeat'] + 1}: look at iteration {k}: {said}", milestone=True)

    def done(self, record: dict) -> None:
        """The pair's outcome, on a line of its own: its one verdict (then RSS's and the heap's, what grew) and RSS's
        growth, or why it did not run."""
        with self._lock:
            self._root.finished += 1
        self._show(self.outcome(record), final=True)

    def outcome(self, record: dict) -> str:
        """The line `done` writes: the pair's label, its verdicts or why it did not run, and the run's status."""
        s = record["summary"]
        if record["status"] == "ok":
            text = (f"{self.label}: {verdict_text(s)}, RSS {kib_text(s['growth_per_iter'])} KiB/iteration, "
                    f"{_measured(record) or 'no'} iterations{given_floor_text(s)}")
        else:
            text = f"{self.label}: {record['status']}: {record['reason']}"
        return f"{text} ({self.status()})"


class Echo:
    """A Progress whose pairs' outcome lines (Progress.outcome: the verdict, pairs done, time left) are also written
    to `echo`, a line each: under asv, whose console shows nothing of a benchmark's stderr, the terminal it runs in."""

    def __init__(self, progress: Progress, echo: TextIO, prefix: str = ""):
        self.progress, self.echo, self.prefix = progress, echo, prefix

    def pair(self, index: int, loop: str, strategy: str, iterations: int, budget: float = 0.0) -> "Echo":
        return Echo(self.progress.pair(index, loop, strategy, iterations, budget), self.echo, self.prefix)

    def start(self, index: int, loop: str, strategy: str, iterations: int, budget: float = 0.0) -> None:
        self.progress.start(index, loop, strategy, iterations, budget)

    def __call__(self, ev: dict) -> None:
        self.progress(ev)

    def done(self, record: dict) -> None:
        self.progress.done(record)
        try:
            with self.progress._lock:
                self.echo.write(f"{self.prefix}{self.progress.outcome(record)}\n")
                self.echo.flush()
        except (OSError, ValueError):  # the terminal went away (a closed ssh session): the run goes on
            pass


def console_stream() -> Optional[TextIO]:
    """The terminal this process runs in (/dev/tty), for lines a parent that captures stdout and stderr (asv) would
    hide; None where there is none (CI, a cron job, a detached session) or KERASBENCH_QUIET is set."""
    if os.environ.get("KERASBENCH_QUIET"):
        return None
    try:
        return open("/dev/tty", "w", encoding="utf-8", errors="replace")
    except OSError:
        return None


def clock_text(seconds: float) -> str:
    """'0:45', '12:05', '1:02:09': a duration as a clock reads it."""
    seconds = int(round(max(0.0, seconds)))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


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


def given_floor_text(summary: dict) -> str:
    """', judged at the given floor of 64 KiB/iteration (not calibrated)' where the verdict's floor was given
    (--floor-kib, floor_kib=, the marker's max_growth) rather than calibrated: a verdict is a claim relative to its
    floor, and a given one is the user's, said on the line that prints the verdict; '' otherwise."""
    if summary.get("margin") is not None:  # protocol 9: a given floor is the margin
        if not str(summary.get("margin_source") or "").startswith("given"):
            return ""
        heap = summary.get("heap_margin")
        if heap is not None and heap != summary["margin"]:  # under RSS's least margin: the heap's (rule.margin_for)
            return (f", judged against the given margin of {floor_kib(heap)} KiB/iteration (RSS at no less than "
                    f"{floor_kib(summary['margin'])})")
        return f", judged against the given margin of {floor_kib(summary['margin'])} KiB/iteration"
    stamp = (summary.get("floors_from") or {}).get("rss") or {}
    given = stamp.get("kind") == "given" or str(summary.get("floor_source") or "").startswith("given")
    if not given or summary.get("floor") is None:
        return ""
    return f", judged at the given floor of {floor_kib(summary['floor'])} KiB/iteration (not calibrated)"


def verdict_text(summary: dict) -> str:
    """The pair's one verdict (rule.pair_verdict), then the RSS and heap verdicts it comes from and what grew, as the
    run table's first columns read together: 'grows (RSS flat, heap grows; leak)', 'flat (RSS flat, heap flat; flat)',
    'flat (RSS flat, heap n/a)' where the allocator cannot be read."""
    from .rule import pair_verdict

    kind, rss, heap = summary.get("growth_kind"), summary.get("verdict") or "n/a", summary.get("heap_verdict") or "n/a"
    return f"{pair_verdict(summary)} (RSS {rss}, heap {heap}" + (f"; {kind})" if kind else ")")


class Labelled:
    """A Progress whose pairs (measured at once or one at a time) are labelled: with their TF version, their row."""

    def __init__(self, progress, labels: List[str]):
        self.progress, self.labels = progress, labels

    def pair(self, index: int, loop: str, strategy: str, iterations: int, budget: float = 0.0):
        mine = self.progress.pair(index, loop, strategy, iterations, budget)
        mine.label = f"{self.labels[index - 1]}: {loop} × {strategy}"
        return mine

    def start(self, index: int, loop: str, strategy: str, iterations: int, budget: float = 0.0) -> None:
        """One pair at a time (the runner's sequential way): the Progress's own line, labelled."""
        self.progress.start(index, loop, strategy, iterations, budget)
        self.progress.label = f"{self.labels[index - 1]}: {loop} × {strategy}"

    def __call__(self, ev: dict) -> None:
        self.progress(ev)

    def done(self, record: dict) -> None:
        self.progress.done(record)


def status_line(stream: TextIO, text: str, final: bool = False, milestone: bool = False) -> None:
    """A progress line: redrawn in place on a terminal (`final` ends it), else written if `final` or `milestone`."""
    text = printable(text, lines=True)
    if stream.isatty():
        stream.write("\r\033[K" + text + ("\n" if final else ""))
    elif final or milestone:
        stream.write(text + "\n")
    stream.flush()


# ---------------------------------------------------------------- the run table


def _rss_series(record: dict) -> list:
    """The RSS readings of a record's first repeat that has some (a stopped worker's partial ones too), else []."""
    repeats = [r for r in record["repeats"] if r.get("result") or r.get("partial_rss")]
    if not repeats:
        return []
    r = repeats[0]
    return (r["result"]["series"]["rss"] if r.get("result") else r["partial_rss"]) or []


def _rss_sparkline(record: dict, span: float = 0.0) -> str:
    return sparkline(_rss_series(record), span=span)


STOPPED = {"decided": "decided", "budget": "budget", "iterations": "max", "growth": "growth", "count": ""}


def _measured(record: dict) -> str:
    """Measured iterations per repeat and why each stopped ("93 decided", "5000 max"; a fixed count: the count)."""
    s = record["summary"]
    counts = s.get("measured") or [r["result"].get("iterations_done") for r in record["repeats"] if r.get("result")]
    if not counts:
        return ""
    stops = {STOPPED.get(x, x) for x in s.get("stopped") or ()} - {""}
    return ",".join(str(n) for n in counts) + (f" {'/'.join(sorted(stops))}" if stops else "")


def _pair_verdict(record: dict, summary: dict) -> str:
    from .rule import pair_verdict

    return pair_verdict(summary) if record["status"] == "ok" else record["status"]


# The record's own columns; each metric with a run column in kerasbench.metrics follows, in registry order. The first
# verdict is the pair's one verdict (rule.pair_verdict: RSS and heap together, what Results.verdicts(), ablate and
# assert_no_growth go by); the RSS and heap verdicts it comes from stand beside it, named.
def pair_labels(loop: str, strategy: str, body: str = "") -> tuple:
    """A pair's one name, wherever it is shown (the run table, the charts, progress, Results.verdicts() keys): a body
    measured by kerasbench.measure or assert_no_growth (`body`: its spec.body, 'module:name') is ('body NAME', 'as
    written') under reuse_model (kerasbench builds nothing and adds nothing between iterations: the body runs as the
    user wrote it), ('body NAME', STRATEGY) under another; anything else (LOOP, STRATEGY)."""
    if not body or loop != "repro":
        return loop, strategy
    return f"body {body.rsplit(':', 1)[-1]}", "as written" if strategy == "reuse_model" else strategy


def loop_label(record: dict) -> str:
    """The loop column (pair_labels)."""
    return pair_labels(record["loop"], record["strategy"], (record.get("spec") or {}).get("body") or "")[0]


def pair_label(record: dict) -> str:
    """'loop × strategy' of a record as its table names it (pair_labels), each name on one line (printable with
    `lines`: a name is data)."""
    return f"{printable(loop_label(record), lines=True)} × {printable(strategy_label(record), lines=True)}"


def strategy_label(record: dict) -> str:
    """The strategy column (pair_labels)."""
    return pair_labels(record["loop"], record["strategy"], (record.get("spec") or {}).get("body") or "")[1]


COLUMNS: tuple = (
    ("loop", lambda r, s: loop_label(r)),
    ("strategy", lambda r, s: strategy_label(r)),
    ("verdict", _pair_verdict),
    ("RSS", lambda r, s: (s.get("verdict") or "n/a") if r["status"] == "ok" else ""),
    ("heap", lambda r, s: (s.get("heap_verdict") or "n/a") if r["status"] == "ok" else ""),
    ("what grew", lambda r, s: (s.get("growth_kind") or "n/a") if r["status"] == "ok" else ""),
    ("measured", lambda r, s: _measured(r) if r["status"] == "ok" else ""),
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
    from .rule import pair_verdict

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
