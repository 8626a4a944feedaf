"""What kerasbench prints: progress on stderr, text tables, sparklines, a pair's names and verdict line.

One text-table renderer (`text_table`, tabulate's) serves the run table (runtable.py), compare and triage.
"""

import os
import re
import textwrap
import threading
import time
from typing import Iterable, List, Optional, Sequence, TextIO

import tabulate as _tabulate_module

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
                    f"{measured_text(record) or 'no'} iterations{given_floor_text(s)}")
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
    from .rule.series import pair_verdict

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


# ---------------------------------------------------------------- a pair's names, its iterations measured


STOPPED = {"decided": "decided", "budget": "budget", "iterations": "max", "growth": "growth", "count": ""}


def measured_text(record: dict) -> str:
    """Measured iterations per repeat and why each stopped ("93 decided", "5000 max"; a fixed count: the count)."""
    s = record["summary"]
    counts = s.get("measured") or [r["result"].get("iterations_done") for r in record["repeats"] if r.get("result")]
    if not counts:
        return ""
    stops = {STOPPED.get(x, x) for x in s.get("stopped") or ()} - {""}
    return ",".join(str(n) for n in counts) + (f" {'/'.join(sorted(stops))}" if stops else "")


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
