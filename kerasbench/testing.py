"""Assertions for users' own test suites: `assert_no_growth(body)` fails a test whose loop body grows.

    from kerasbench.testing import assert_no_growth

    def predict_once():            # module level: the fresh worker imports it by name (else: sent by value)
        MODEL.predict(X, verbose=0)

    def test_predict_does_not_leak():
        assert_no_growth(predict_once, iterations=30)

The body runs in a fresh worker process (kerasbench.api.measure: the repro machinery), warm-up first, then
measured until both of its verdicts are decided or the profile's time budget is spent (`iterations=N`: exactly N).
It passes only when the pair reads flat, RSS and heap together (rule.pair_verdict): the 95% CI of RSS growth per
iteration below the RSS floor and the heap's below the heap floor (the floors `kerasbench calibrate` stored for
this machine and allocator, else 64 KiB/iteration). A heap that grows fails it under a flat RSS (a leak that
fills the allocator's free pages first). `grows`, `inconclusive`, or a worker stopped by the memory cap or the
time limit raise AssertionError with the slopes, their CIs, the floors and the RSS curve. A body that raises in
the worker is a UsageError naming the exception. A function the worker cannot import by name (a lambda, a nested
function, a notebook cell's) is sent there by value with cloudpickle (see kerasbench.api).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from .api import BODY_STRATEGY, DEFAULT_WARMUP, measure
from .protocol import version_of, version_text
from .rule.series import pair_verdict

PASSES = ("flat",)  # the verdicts that pass: inconclusive means "not shown flat", so it fails (more time)


def failure_message(record: dict, asked: str = "assert_no_growth(..., trace=10)") -> str:
    """Why a record does not pass: its verdict or stop, slope and CI, the floor and where it came from, the curve;
    an untraced one's hint says how to trace it as the caller spells it (`asked`: the marker's own `trace=`)."""
    from .console import given_floor_text, sparkline
    from .units import floor_kib, kib_text, mib_text

    from .console import loop_label, strategy_label

    s = record["summary"]
    what = f"{loop_label(record)} × {strategy_label(record)}"
    if record["status"] != "ok":
        head = f"{what}: {record['status']}: {record['reason']}"
    else:
        head = (f"{what}: verdict {pair_verdict(s)} (RSS {s['verdict']}, heap {s.get('heap_verdict') or 'n/a'}, "
                f"what grew: {s.get('growth_kind') or 'n/a'}; passes only when flat){given_floor_text(s)}")
    series = next((r["result"]["series"]["rss"] if r.get("result") else r.get("partial_rss")
                   for r in record["repeats"] if r.get("result") or r.get("partial_rss")), None) or []
    lines = [head]
    if s.get("growth_per_iter") is not None:
        trend = f", Kendall p {s['p_trend']:.3g}" if s.get("p_trend") is not None else ""
        lines.append(f"  growth {kib_text(s['growth_per_iter'])} KiB/iteration, 95% CI "
                     f"[{kib_text(s['growth_ci_low'])}, {kib_text(s['growth_ci_high'])}] KiB/iteration{trend}")
    if s.get("heap_growth_per_iter") is not None:
        lines.append(f"  heap {kib_text(s['heap_growth_per_iter'])} KiB/iteration, 95% CI "
                     f"[{kib_text(s['heap_growth_ci_low'])}, {kib_text(s['heap_growth_ci_high'])}] KiB/iteration, "
                     f"heap {_heap_margin(s)}{floor_kib(s['heap_floor'])} KiB/iteration")
    if s.get("why"):
        lines.append(f"  not decided: {s['why']}")
    if s.get("margin") is not None:
        lines.append(f"  margin {floor_kib(s['margin'])} KiB/iteration ({s.get('margin_source') or 'given'}), "
                     f"resolution {floor_kib(s['floor'])} KiB/iteration from {s.get('floor_source') or 'given'}; "
                     f"judged by {version_text(version_of(s))}")
    else:
        lines.append(f"  floor {floor_kib(s['floor'])} KiB/iteration, from {s.get('floor_source') or 'given'}; judged "
                     f"by {version_text(version_of(s))}")
    if series:
        lines.append(f"  RSS {sparkline(series, width=40)}  {mib_text(series[0])} -> {mib_text(series[-1])} MiB "
                     f"over {len(series)} iterations")
    return "\n".join(lines + _where(record, asked))


def _heap_margin(s: dict) -> str:
    """'margin 8 KiB/iteration, resolution ' of a protocol 9 summary's heap, 'floor ' of an older one."""
    from .units import floor_kib

    if s.get("heap_margin") is None:
        return "floor "
    return f"margin {floor_kib(s['heap_margin'])} KiB/iteration, resolution "


# Where the growth goes: a traced record's own answer, else how to ask for it and what that costs (docs/commands.md,
# `--trace`: a tiny Keras fit iteration 0.42 s untraced, 5.0 s traced).
TRACE_HINT = ("  where: run it again with trace=10 ({asked}) to name your lines and what holds "
              "the objects that grow; tracemalloc in the worker makes a Keras fit iteration ~12x slower, and that "
              "run's verdict is of a traced loop")


def _where(record: dict, asked: str) -> list:
    """The trace's lead, holders and first lines of the user's code (a traced record), else TRACE_HINT; nothing for
    a record that did not run."""
    from .trace.records import traced
    from .trace.readout import where_text

    if record["status"] != "ok":
        return []
    if not traced(record):
        return [TRACE_HINT.format(asked=asked)]
    return where_text(record)


def assert_no_growth(body: Callable, strategy: str = BODY_STRATEGY, iterations: Optional[int] = None,
                     setup: Optional[Callable] = None, warmup: int = DEFAULT_WARMUP, repeats: int = 1,
                     floor_kib: Optional[float] = None, tf: Optional[str] = None, **spec: Any) -> dict:
    """Run `body` in a fresh worker and raise AssertionError unless it reads flat, RSS and heap together.

    `body` and `setup` are functions (module-level ones the worker imports, others it gets by value); `body()` runs
    each iteration, or `body(ctx)` with `ctx = setup()` (called once, before warm-up). `strategy` is one of the repro
    loop's (`reuse_model`, the default, adds nothing between iterations). `floor_kib` overrides the calibrated
    floor: a number of KiB, or a size as pytest-memray writes one ("16 KB" is 16,384 bytes, units.limit_kib); `tf`
    runs the worker in that TF release's asv environment. Returns the record when it passes.
    """
    if isinstance(floor_kib, str):  # a limit as pytest-memray writes it, "16 KB" (16,384 bytes): units.limit_kib
        from .units import limit_kib

        floor_kib = limit_kib(floor_kib, "floor_kib")
    records = measure(body=body, setup=setup, strategies=[strategy], iterations=iterations, warmup=warmup,
                      repeats=repeats, floor_kib=floor_kib, tf=tf, **spec)
    record = records[0]
    if record["status"] != "ok" or pair_verdict(record["summary"]) not in PASSES:
        error = AssertionError(failure_message(record))
        error.record = record  # the full record, for a caller that wants more than the message
        raise error
    return record


__all__ = ["assert_no_growth", "failure_message"]
