"""`kerasbench ablate`: measure every cleanup-step variant of each loop, print the tables and the conclusion.

The analysis (variants, necessary and sufficient, the conclusion, the tables) is kerasbench.ablate's; this is the
session that measures the variants (runner.measure_pairs, records kept as they end) and writes the HTML report.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Sequence, TextIO

from . import options

if TYPE_CHECKING:  # the type only: the runner loads the loop shapes (numpy) when a command measures
    from ..spec import RunSpec

NAME = "ablate"
HELP = ("which cleanup steps are necessary and which suffice: the full cleanup, each step alone, and all but each "
        "step, each in fresh workers")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..ablate import BASE
    from ..strategies import CLEANUPS

    p.add_argument("--loop", help="loop shape(s) that rebuild a model, comma list: sweep, kfold, notebook, inference")
    options.repro(p, "ablate your own loop body (a repro file with build)")
    p.add_argument("--steps", default="all", help="cleanup steps, comma list or 'all' (default): "
                   + ", ".join(CLEANUPS))
    p.add_argument("--base", default=BASE,
                   help=f"the strategy the steps are added to (default {BASE}: a new model, nothing released)")
    options.metric(p, "growth_per_iter", "what a step must keep down: growth_per_iter (default: sufficient = alone "
                   "it reads flat), or any metric compare judges, e.g. peak_over_setup (sufficient = alone as good "
                   "as the full cleanup)")
    options.backend(p)
    options.release(p)
    options.counts(p, "variant")
    options.limits(p, "variant")
    options.json_output(p)
    p.add_argument("--html", metavar="PATH", type=options.path,
                   help="also write the HTML report of them (the records go to --json, else beside it as .json)")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Exit 0 when every variant ran (or skipped), 1 when one failed or was stopped; records are written as
    variants finish (--json), an interrupt keeps the finished ones; --html writes the report of them."""
    from .. import _compat, ablate, selection, session
    from ..errors import UsageError
    from ..profiles import get_profile
    from ..triage import check_metric

    profile = get_profile(args.profile)
    loop = options.loop_of(args)
    if loop is None:
        raise UsageError("Which loop? Give --loop NAME (one that rebuilds its model: sweep, kfold, notebook, "
                         "inference) or --repro FILE.")
    loops = selection.loops_named(loop)
    for name in loops:
        ablate.check_base(args.base, name)
    steps = chosen_steps(args.steps, args.backend or _compat.backend())
    metric = check_metric(args.metric)
    base = session.base_spec(profile, [(loops[0], args.base)], args.iterations, args.warmup, args.repeats,
                             backend=args.backend, **options.spec_options(args))
    json_path = args.json or (os.path.splitext(args.html)[0] + ".json" if args.html else None)
    options.check_outputs({"--json" if args.json else "the records (--html's name, .json)": json_path,
                           "--html": args.html}, {"--repro": args.repro, "--config": options.config_read(args)})
    pins = options.parse_pins(args.pin) if args.tf else args.pin  # without --tf, use_release says --pin needs it
    base = session.use_release(base, args.config, args.tf, sys.stderr, args.python, pins, args.keras or "",
                               args.machine)
    kept = measure_and_show(base, loops, steps, args.base, out, sys.stderr, json_path, metric)
    if kept.error:  # said on one line after the tables
        return 1
    if args.html:
        from .. import report

        out.write(f"wrote the HTML report to {report.write([json_path], args.html)}\n")
    return 1 if kept.failed() else 0


def chosen_steps(given: str, backend: str) -> tuple:
    """The cleanup steps of `--steps` (ablate.check_steps): 'all' leaves out another backend's own steps and those
    that need a GPU (ablate measures on the CPU: they would only skip, and with them the full cleanup and every
    leave-one-out but their own); a GPU's step named is a UsageError."""
    from .. import _compat, ablate, selection
    from ..errors import UsageError
    from ..strategies import CLEANUPS

    named = selection.names(given, CLEANUPS, "steps")
    if given == "all":
        named = [s for s in named if not ((set(_compat.BACKENDS) - {backend}) | {"gpu"}) & set(CLEANUPS[s].needs)]
    on_gpu = [s for s in named if s in CLEANUPS and "gpu" in CLEANUPS[s].needs]  # unknown ones: check_steps
    if on_gpu:
        raise UsageError(f"Step {on_gpu[0]} needs a GPU, and ablate measures on the CPU: every variant with it would "
                         "be skipped. Leave it out of --steps (--steps all leaves it out).")
    return ablate.check_steps(named)


def measure(spec: RunSpec, loops: Sequence[str], steps: Sequence[str], base: str, progress: Optional[Any] = None,
            finished: Optional[Callable[[Any], None]] = None) -> List[Any]:
    """Measure every variant of each of `loops` with `spec`'s settings (runner.measure_pairs: fresh workers, one
    progress count over all of them); the records."""
    from ..ablate import pairs
    from ..runner import measure_pairs

    todo = [pair for loop in loops for pair in pairs(loop, steps, base)]
    return measure_pairs(spec, todo, lambda strategy: spec, progress, finished)  # spec's own counts for every one


def measure_and_show(spec: RunSpec, loops: Sequence[str], steps: Sequence[str], base: str, out: TextIO, err: TextIO,
                     json_path: Optional[str] = None, metric: str = "growth_per_iter") -> Any:
    """The session: measure every variant of each loop, print the tables, the wall and the file.

    Records are written to `json_path` as variants finish (session.Kept: an interrupt keeps the finished ones and
    shows their tables, the rest n/a). Returns the session.Kept: its records, `error` when the file could not be
    written (said already), `failed()` when a variant failed or was stopped.
    """
    import time

    from ..ablate import pairs, tables
    from ..console import Progress
    from ..session import Kept

    named = [pair for loop in loops for pair in pairs(loop, steps, base)]  # each loop's variants, in order
    kept = Kept(named, json_path, what="variant", ablation={"base": base, "steps": list(steps), "metric": metric})

    def show() -> None:
        out.write(tables(kept.records, steps, base, spec.counts_text(), spec.repeats, metric))
        out.flush()

    started, load = time.monotonic(), os.getloadavg()[0]
    kept.through(lambda finished: measure(spec, loops, steps, base, Progress(err, len(named), spec.warmup), finished),
                 show, out, err)
    show()
    if kept.path and kept.records and not kept.failed():  # every variant measured: the answer joins the records
        from ..ablate import answer

        kept.payload["answer"] = answer(kept.records, steps, base, metric)
        kept.error = kept.save()
    out.write(f"wall {(time.monotonic() - started) / 60:.1f} min for {len(named)} variant(s); load average "
              f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end\n")
    kept.report(out, err, said=" (kerasbench compare / report read it)", write=False)
    return kept
