"""`kerasbench attribute`: which package(s) carry a change, each environment of the plan made and measured.

The plan, the classes and the conclusion are kerasbench.attribute's (pure: pins in, rows and words out); this is
the session that reads the two sides' pins (an asv environment's, or a TF release's from the package index), makes
the environments (environment.Ahead), measures them in fresh workers (runner.measure_specs) and prints the answer.
`bracket` is `triage --attribute`'s: the bracket triage found, its two ends reused.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import sys
import time
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, TextIO, Tuple

from .. import asvconf, environment
from ..asvconf import INSTALLER_ONLY
from ..attribute import (MAX_ENVS, AcrossDistributions, Plan, Row, TooManyEnvironments, bridge_rows, check_max_envs,
                         classify_rows, conclude, differing, needs_leave_one_out, plan, render, same_pins, summary)
from ..errors import UsageError
from . import options

if TYPE_CHECKING:  # types only: the runner loads the loop shapes (numpy) when a command measures
    from ..record import Record
    from ..spec import RunSpec

NAME = "attribute"
HELP = ("which package(s) carry a change: the bad environment's packages moved into the good one alone (and with "
        "what they need), or put back one at a time, each measured")


def max_envs(p: argparse.ArgumentParser, text: str) -> None:
    """--max-envs of attribute and `triage --attribute`."""
    p.add_argument("--max-envs", type=options.integer("max-envs", 0), default=MAX_ENVS, metavar="N",
                   help=f"{text} (default {MAX_ENVS})")


def pair_template(args: argparse.Namespace, loop: str):
    """The validated RunSpec of triage's and attribute's pair: the profile's budgeted sequential protocol (`--profile`,
    default $KERASBENCH_PROFILE or 'default': each side measured until its verdicts are decided or its budget spent,
    as `run` measures), or exactly `--iterations N`; `--warmup`, `--repeats` over the profile's. Also the machine name
    its records will say (a bad $KERASBENCH_MACHINE: one line before any environment is made)."""
    from ..machine import name as machine_name
    from ..profiles import get_profile
    from ..session import base_spec

    machine_name()
    return base_spec(get_profile(args.profile), [(loop, args.strategy)], args.iterations, args.warmup, args.repeats,
                     repro=args.repro or "", allocator=args.allocator, device=args.device, backend=args.backend)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--good", metavar="ENV_OR_RELEASE", help="a TF release (its asv environment's "
                   "pins), a TF nightly (nightly:DATE or its version: as triage names a bracket's end) or an asv "
                   "environment (name or folder) with the behaviour you expect")
    p.add_argument("--bad", metavar="ENV_OR_RELEASE", help="the one whose behaviour changed")
    p.add_argument("--backends", metavar="A,B,…", help="instead of --good/--bad: the pair measured on each of these "
                   "Keras 3 backends (tensorflow,jax,torch) in this interpreter (or --tf's environments), answering "
                   "whether the growth follows Keras across them or is one backend's (docs/backends.md)")
    p.add_argument("--tf", metavar="VERSION", help="with --backends: each backend measured in the asv environment of "
                   "this TF release with that backend's framework (`run --tf V --backend B`'s: the atlas' 2.21.0+jax "
                   "column), not in this interpreter")
    options.bisected_pair(p)
    options.counts(p, "environment")
    options.bisect_environments(p, "the environments on this Python (default: the config's)")
    p.add_argument("--jobs", type=options.integer("jobs", 1), default=2,
                   help="environments measured at once (default 2; seconds_per_iter "
                   "one at a time)")
    max_envs(p, "stop before making anything when the plan (ends, single moves, groups, leave-one-out) "
                     "could need more than N environments")
    options.allocator(p)
    options.json_output(p, "every environment's record and the attribution")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """`kerasbench attribute`: checks the options (one-line errors), reads the two sides' pins, attributes, prints,
    writes --json."""
    from .. import triage
    from ..questions import result
    from ..asvconf import find_config
    from ..files import write_json

    if args.backends is not None:
        return across_backends(args, out)
    if args.tf is not None:
        raise UsageError("--tf goes with --backends (the release whose environments each backend is measured in); "
                         "--good and --bad name the two sides of an attribution.")
    if not args.good or not args.bad:
        raise UsageError("Attribute what? Give --good and --bad (two releases or environments), or --backends A,B.")
    metric = triage.check_metric(args.metric)
    args.config = find_config(args.config)
    if args.good.strip() == args.bad.strip():
        raise UsageError(f"Nothing to attribute: --good and --bad are the same ({args.good}).")
    loop = options.loop_of(args)
    if loop is None:
        raise UsageError("What to measure? Give --loop NAME and --strategy NAME, or --repro FILE.")
    spec = pair_template(args, loop)
    options.check_outputs({"--json": args.json}, {"--repro": args.repro, "--config": args.config})
    if args.max_envs < 3:
        raise UsageError(f"Invalid value for argument `max_envs`. Received: max_envs={args.max_envs!r}. Expected 3 "
                         "or more (the two ends and one package moved).")
    good = side_pins(args.config, args.good, args.python)
    bad = side_pins(args.config, args.bad, args.python)
    text, rows, conclusion = attribute(args.config, good, bad, spec, metric, options.reproduce(args, loop),
                                       sys.stderr, args.python, args.jobs, max_envs=args.max_envs)
    out.write(text)
    if args.json:
        from ..record import records_payload

        kept = [r.record for r in rows if r.record is not None]
        write_json(args.json, records_payload(kept, attribution=summary(rows, metric, good, bad),
                                              answer=result(conclusion.text, alike=conclusion.kind == "no change")))
        out.write(f"wrote {len(kept)} record(s) to {args.json}\n")
    return 0


def side_pins(config: str, side: str, python: Optional[str] = None) -> Dict[str, str]:
    """The pins of --good/--bad `side`: a TF release (its asv environment's pins), a TF nightly ('nightly:DATE' or
    its version, 2.22.0.dev20260627: triage's pins of it, with the keras-nightly and tb-nightly uploaded before it), or
    an asv environment's name or folder (its asv-env-info.json)."""
    from ..files import read_json
    from ..versions import is_nightly

    folder = side if os.path.isdir(side) else os.path.join(asvconf.env_dir(config), side)
    info = os.path.join(folder, "asv-env-info.json")
    if os.path.isfile(info):
        try:
            return dict(read_json(info, "asv environment info")["requirements"])
        except (ValueError, KeyError, TypeError):
            raise UsageError(f"Cannot read the pins of environment {side}: {info} has no 'requirements'.") from None
    release = all(part.isdigit() for part in side.split(".")) and side.count(".") >= 1
    if release or (is_nightly(side) and side != "nightly"):  # a nightly as triage names a bracket's end (not the word)
        return environment.requirements_with(config, side, python)[0]  # a release's pins, or a nightly's as triage's
    raise UsageError(f"Unknown environment. Received: {side!r}. Expected a TF release (e.g. 2.13.1), a TF nightly "
                     f"(nightly:2026-06-27 or its version), or an asv environment of {config} (`kerasbench envs`) "
                     "or its folder.")


def reproduce_args(config: str, pins: Dict[str, str], python: Optional[str] = None) -> List[str]:
    """`--tf VERSION [--pin NAME==VERSION ...]`: the `kerasbench run` options that make the environment of `pins`."""
    from .. import releases

    entries = asvconf.includes(config)
    package = asvconf.tf_package(entries)
    tf = pins.get(package)
    nightly = next((name for name in ("tf-nightly-cpu", "tf-nightly") if name in pins), None)
    if tf is None and nightly:  # a nightly's environment: `run --tf <its version>` with the rest pinned as it was
        return ["--tf", pins[nightly]] + ["--pin={}=={}".format(*asvconf.split_pin(name, value)[:2])
                                          for name, value in pins.items() if name not in INSTALLER_ONLY + (nightly,)]
    if tf is None:
        return [f"--pin={name}=={version}" for name, version in pins.items() if name not in INSTALLER_ONLY]
    try:
        default = releases.requirements_for(tf, entries, python=python)
    except UsageError:
        default = {}
    args = ["--tf", tf]
    for name, value in pins.items():
        if name != package and name not in INSTALLER_ONLY and default.get(name) != value:
            if asvconf.package_of(name) == "tf-keras":  # the matrix's tf_keras entries, as `run` makes them
                args += ["--keras", "tf_keras"]
            else:
                args.append("--pin={}=={}".format(*asvconf.split_pin(name, value)[:2]))
    return args


def bridges(config: str, good: Dict[str, str], bad: Dict[str, str], python: Optional[str] = None) -> List[Row]:
    """The bridges across the Keras 2 -> 3 switch (attribute.bridge_rows) of `config`'s TF package, each with the
    tf_keras release the package index has for its TF on Python `python` (default the config's)."""
    from .. import releases

    includes = asvconf.includes(config)
    here = python or asvconf.config_python(includes)
    return bridge_rows(good, bad, asvconf.tf_package(includes), lambda tf: releases.tf_keras_for(tf, here))


def resolver(config: str, pins: Dict[str, str], python: Optional[str] = None
             ) -> Optional[Callable[[Dict[str, str]], Tuple[bool, str]]]:
    """environment.resolves with the uv and Python an environment of `config` would be made with (None without uv)."""
    _, env = environment.environment_for(config, pins, python) if python else environment.environment_for(config, pins)
    uv = environment.installer(env)
    if not uv:
        return None
    return lambda reqs: environment.resolves(uv, reqs, env._python)


def _measure(envs: environment.Ahead, rows: Sequence[Row], template: RunSpec, metric: str, err: TextIO,
             jobs: int) -> None:
    """Make each row's environment (`envs`, one at a time: a row the installer cannot make is unclear, an end
    raises) and measure the ones without a record, `jobs` at once (runner.measure_specs), each in fresh workers."""
    from .. import runner
    from ..console import Labelled, Progress, status_line

    for row in rows:
        if row.record is not None:
            continue
        try:
            row.python, row.env_name = envs.get(row.label)
        except UsageError as e:
            if row.kind == "end":
                raise
            row.cls, row.reason = "unclear", f"not installable: {e}"
            status_line(err, f"attribute: {row.label}: {row.reason}", final=True)
            continue
        installed = environment.install_note(row.python)
        row.forced, row.why = list(installed.get("forced") or []), installed.get("why") or ""
    todo = [row for row in rows if row.record is None and row.python]
    if not todo:
        return
    specs = [dataclasses.replace(template, python=row.python) for row in todo]
    progress = Labelled(Progress(err, len(todo), template.warmup), [row.label for row in todo])
    # a repro that raises in a step's mix of two releases' packages is that step's failure (like neither end), not
    # the file's; one that raises at an end, in a release's own environment, is the file's: its error, as run says
    measured = runner.measure_specs(specs, jobs, progress, metric=metric, repro_raises=False)
    # in the order given; when an interrupt left some out, each record's spec names its interpreter
    by_python = {r["spec"].get("python"): r for r in measured} if len(measured) < len(specs) else \
        {spec.python: r for spec, r in zip(specs, measured)}
    for row, spec in zip(todo, specs):
        row.record = by_python.get(spec.python)
        if row.record is not None:
            row.record["asv_env"] = row.env_name
    for row in todo:
        if row.kind == "end" and row.record is not None and template.repro and row.record["status"] == "failed":
            raise runner.repro_failed(template.repro, row.record)


def attribute(config: str, good: Dict[str, str], bad: Dict[str, str], template: RunSpec, metric: str,
              reproduce: List[str], err: TextIO, python: Optional[str] = None, jobs: int = 2,
              known: Optional[Dict[str, Record]] = None, max_envs: Optional[int] = None
              ) -> Tuple[str, List[Row]]:
    """`kerasbench attribute`: measure the ends, each one-package move, each group the installer needs, and when no
    single package carries the change, each package put back into the bad end; (the answer and table, the rows).

    `template` is the validated RunSpec of the pair; `reproduce` the `kerasbench run` command line each row's
    environment options are appended to. `known` ({'good': record, 'bad': record}) are ends measured already
    (triage's bracket): not measured again. `max_envs`: a UsageError, before anything is made, when the plan
    could need more environments. Progress goes to `err`.
    """
    from ..console import status_line

    started = time.monotonic()
    names = differing(good, bad)
    n = len(names)
    check_max_envs(2 + 2 * n if n > 2 else 2 + n, max_envs, f"2 ends + {n} single + {n if n > 2 else 0} "
                   "leave-one-out, before any group")
    planned = plan(good, bad, resolver(config, good, python) if n > 2 else None)  # 2: their group is the bad end
    planned.rows += [row for row in bridges(config, good, bad, python)
                     if not any(same_pins(row.pins, r.pins) for r in planned.rows)]
    check_max_envs(planned.count(), max_envs, planned.describe())
    rows = planned.rows
    known = known or {}
    status_line(err, f"attribute: {len(names)} package(s) differ: "
                     f"{', '.join(f'{n} {good.get(n, chr(8212))} → {bad[n]}' for n in names)}", final=True)
    status_line(err, f"attribute: plan: {planned.describe()}", final=True)
    for row in rows:
        row.record = known.get(row.label) if row.kind == "end" else None
    pins = {row.label: row.pins for row in rows + planned.leave_one_out}
    note = lambda label, text: status_line(err, f"attribute: {label}: {text}", final=True)  # noqa: E731
    with environment.Ahead(config, pins.__getitem__, note, python) as envs:  # made as each is needed
        return _measured(envs, planned, template, metric, reproduce, err, jobs, config, python, started)


def _measured(envs: environment.Ahead, planned: Plan, template: RunSpec, metric: str, reproduce: List[str],
              err: TextIO, jobs: int, config: str, python: Optional[str], started: float) -> Tuple[str, List[Row]]:
    """`attribute` once planned: the rows measured (leave-one-out too when no single package carries it),
    classified and concluded; (the answer and table, the rows)."""
    from .. import triage
    from ..console import status_line

    rows, good, bad = planned.rows, planned.rows[0].pins, planned.rows[1].pins
    what = f"{template.loop} × {template.strategy} ({metric})"
    _measure(envs, rows, template, metric, err, jobs)
    ends = rows[0].record, rows[1].record
    if ends[0] is None or ends[1] is None:
        raise UsageError("attribute: an end was not measured (interrupted)")
    differ, why = triage.ends_differ(metric, *ends) if all(e["status"] == "ok" for e in ends) else \
        (False, "an end did not measure: " + "; ".join(f"{e['status']}: {e['reason']}" for e in ends
                                                         if e["status"] != "ok"))
    status_line(err, f"attribute: bad vs good: {why}", final=True)
    rows[0].cls, rows[1].cls = ("good", "bad") if differ else ("unclear", "unclear")
    rows[0].reason = rows[1].reason = why
    classify_rows(rows, ends, metric, err)
    if differ and planned.leave_one_out and needs_leave_one_out(rows):
        status_line(err, f"attribute: no single package carries it: {len(planned.leave_one_out)} leave-one-out "
                         "environment(s), the bad one with each package put back", final=True)
        rows = rows + planned.leave_one_out
        _measure(envs, planned.leave_one_out, template, metric, err, jobs)
        classify_rows(planned.leave_one_out, ends, metric, err)
    conclusion = conclude(rows, good, bad, differ, why, what)
    commands = [shlex.join(reproduce + reproduce_args(config, row.pins, python)) for row in rows]
    text = render(rows, good, bad, metric, conclusion.text, commands, time.monotonic() - started)
    return text, rows, conclusion


def bracket(config: str, outcome, records: Dict[str, Record], template: RunSpec, metric: str,
            reproduce: Sequence[str], out: TextIO, err: TextIO, python: Optional[str] = None, jobs: int = 2,
            max_envs: Optional[int] = MAX_ENVS) -> dict:
    """`triage --attribute`: attribute the bracket triage found (its two measured ends reused); the JSON extra.

    The rows' records join `records` (by label); {} and a line saying so when triage found no bracket, or when
    the plan needs more than `max_envs` environments (triage's answer is kept either way).
    """
    if not outcome.first_bad:
        out.write("attribute: no bracket of a good and a bad release to attribute\n")
        return {}
    good, bad = outcome.last_good, outcome.first_bad
    out.write(f"\nattribute: {good} (good) vs {bad} (bad)\n")
    try:
        text, rows, _ = attribute(config, outcome.pins[good], outcome.pins[bad], template, metric, reproduce, err,
                               python, jobs, known={"good": records[good], "bad": records[bad]}, max_envs=max_envs)
    except (TooManyEnvironments, AcrossDistributions) as e:  # triage's own answer stands (and is written): only the
        # attribution is not run
        out.write(f"attribute: not run: {e}\n")
        return {}
    out.write(text)
    records.update({row.label: row.record for row in rows[2:] if row.record is not None})
    return {"attribution": summary(rows, metric)}


def across_backends(args: argparse.Namespace, out: TextIO) -> int:
    """`attribute --backends A,B`: the pair measured on each backend in this interpreter (KERAS_BACKEND per worker,
    the profile's protocol until decided), each side's pair verdict, and whose growth it is
    (attribute.backends_conclusion)."""
    from .. import runner
    from .._compat import BACKENDS
    from ..questions import result
    from ..attribute import BACKENDS_HEADERS, backends_alike, backends_conclusion, backends_table
    from ..console import Progress, text_table
    from ..files import write_json
    from ..record import records_payload
    from ..rule import pair_verdict

    if args.good or args.bad:
        raise UsageError("--backends measures one environment on several backends: leave out --good and --bad.")
    named = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown_ = [b for b in named if b not in BACKENDS]
    if len(set(named)) < 2 or unknown_:
        raise UsageError(f"Invalid value for argument `backends`. Received: {args.backends!r}. Expected two or more of "
                         f"{', '.join(BACKENDS)}, comma separated.")
    named = list(dict.fromkeys(named))
    loop = options.loop_of(args)
    if loop is None:
        raise UsageError("What to measure? Give --loop NAME and --strategy NAME, or --repro FILE.")
    if args.backend:
        raise UsageError("--backends names the backends measured: leave out --backend.")
    template = pair_template(args, loop)
    options.check_outputs({"--json": args.json}, {"--repro": args.repro})
    specs = [dataclasses.replace(template, backend=b).validate() for b in named]
    if args.tf is not None:  # each in the release's environment with its framework, as the atlas' columns
        from ..session import use_release

        specs = [use_release(spec, args.config, args.tf, sys.stderr, args.python) for spec in specs]
    elif args.python:
        raise UsageError("--python with --backends picks the Python of --tf's environments: give --tf VERSION too.")
    started = time.monotonic()
    records = runner.measure_specs(specs, args.jobs, Progress(sys.stderr, len(specs), template.warmup))
    rows = list(zip(named, records))
    verdicts = {b: (pair_verdict(r.get("summary") or {}) if r.get("status") == "ok" else "inconclusive",
                    str((r.get("summary") or {}).get("growth_kind") or "")) for b, r in rows}
    answer = backends_conclusion(verdicts, dict(rows))
    where = f" in TF {args.tf}'s environments" if args.tf is not None else ""
    out.write(f"{loop} × {args.strategy} on {len(named)} Keras backends{where} "
              f"({time.monotonic() - started:.0f} s):\n")
    out.write("\n".join(text_table(BACKENDS_HEADERS, backends_table(rows))) + "\n")
    out.write(f"Answer: {answer}\n")
    if args.json:
        write_json(args.json, records_payload(records, attribution={"backends": named, "verdicts": verdicts,
                                                                    "answer": answer},
                                              answer=result(f"Answer: {answer}",
                                                            backends_alike=backends_alike(verdicts))))
        out.write(f"wrote {len(records)} record(s) to {args.json}\n")
    return 0
