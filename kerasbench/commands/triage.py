"""`kerasbench triage`: bisect TF releases (or Keras releases at one TF: --package keras) for the first whose
behaviour differs, each release's asv environment made and its pair measured.

The bisection, the classes and the answer are kerasbench.triage's (pure); this is the session that makes the
environments (environment.Ahead: one at a time, ahead of the step that needs them), measures the ends and each step
(runner.measure_specs) and, with --attribute, attributes the bracket (commands.attribute.bracket).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, TextIO, Tuple

from ..errors import UsageError, repro_failed
from ..triage import (SKIPPED, Outcome, bisect, classify, ends_differ, ends_judged, max_steps_default, render,
                      steps_needed)
from . import options
from .attribute import bracket, max_envs, pair_template

if TYPE_CHECKING:  # types only: the runner loads the loop shapes (numpy) when a command measures
    from ..record import Record
    from ..spec import RunSpec

NAME = "triage"
HELP = "bisect TF releases for the first whose behaviour differs (asv environments)"
CLOCK = time.monotonic  # the clock of triage's wall and its steps' progress (tests give a fake one)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--good", required=True, metavar="VERSION", help="a TF release with the behaviour you expect "
                   "(or an earlier nightly:YYYY-MM-DD; with --package keras a Keras release or keras-nightly)")
    p.add_argument("--bad", required=True, metavar="VERSION", help="a TF release with the behaviour that changed, "
                   "or nightly / nightly:YYYY-MM-DD: the nightlies after --good's branch cut are bisected (one build "
                   "throughout; the commits between the two it ends on are printed); with --package keras: "
                   "keras-nightly builds at --tf")
    options.bisected_pair(p)
    options.counts(p, "version")
    options.bisect_environments(p, "bisect on this Python (default: the config's, 3.11); only releases with a wheel "
                                   "for it")
    p.add_argument("--jobs", type=options.integer("jobs", 1), default=2, help="2 (default): both ends measured at "
                   "once (memory figures per process; seconds_per_iter is always measured one at a time); 1: one at a "
                   "time")
    p.add_argument("--latest-patches", action="store_true",
                   help="only the releases the asv config pins (latest patch per minor), not every patch release")
    options.allocator(p)
    options.json_output(p, "every version's record and the answer")
    p.add_argument("--package", default="tensorflow", choices=("tensorflow", "keras"),
                   help="what to bisect: TF releases (default), or Keras releases at one TF (--tf)")
    p.add_argument("--tf", metavar="VERSION", help="with --package keras: the TF release whose environment gets "
                   "each Keras")
    p.add_argument("--attribute", action="store_true", help="then measure which package of the bracket's "
                   "environments carries the change (as `kerasbench attribute`)")
    max_envs(p, "with --attribute: as attribute's")
    p.add_argument("--max-steps", type=options.integer("max-steps", 2), metavar="N",
                   help="versions measured at most, the ends included (default: a one-step bisection's, and as many "
                        "again for the two halves a release like neither end splits the range into)")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Bisect, print the answer (and the attribution of its bracket), write --json; exit 0 when it ran."""
    from .. import triage
    from ..files import write_json

    loop = options.loop_of(args)
    metric, args.config = triage.check_request(args.metric, args.config, args.good, args.bad, loop, args.package,
                                               args.tf, args.jobs)
    template = pair_template(args, loop)
    options.check_outputs({"--json": args.json}, {"--repro": args.repro, "--config": args.config})
    reproduce = options.reproduce(args, loop)
    text, outcome, records = bisect_releases(args.config, args.good, args.bad, template, metric,
                                             args.latest_patches, reproduce, sys.stderr, args.python,
                                             args.jobs, args.tf, args.attribute, args.max_steps)
    out.write(text)
    extra = {}
    if args.attribute:  # the bracket's two environments: which package carries it (records join the triage's)
        extra = bracket(args.config, outcome, records, template, metric, reproduce, out, sys.stderr,
                        args.python, args.jobs, args.max_envs)
    if args.json:
        from ..record import records_payload

        write_json(args.json, records_payload(records.values(), triage=triage.summary(outcome, metric),
                                              answer=triage.result(outcome), **extra))
        out.write(f"wrote {len(records)} record(s) to {args.json} (kerasbench compare / report read it)\n")
    return 0


def version_pins(config: str, version: str, python: Optional[str] = None, tf: Optional[str] = None,
                 flavour: str = "", backend: str = "") -> Dict[str, str]:
    """The pins of `version`'s environment: a TF release's (its full build when compared with full-build nightlies:
    `flavour` 'cuda'), a TF nightly's, or TF `tf`'s with that Keras (`--package keras`), with Keras 3's `backend`
    (jax, torch) there: a Keras bisected at one backend."""
    from .. import asvconf, environment, nightlies

    if tf:
        return environment.requirements_with(config, tf, python, keras=version, backend=backend)[0]
    includes = asvconf.includes(config)
    here = python or asvconf.config_python(includes)
    if nightlies.is_nightly(version):
        return nightlies.tf_requirements(nightlies.resolve_tf(version, here, flavour)[0], includes, here)
    # like with like: a release compared with full-build nightlies in its full build (run --pin tensorflow==V)
    full = {"tensorflow": version} if flavour == "cuda" else None
    return environment.requirements_with(config, version, python, full, backend=backend)[0]


def versions_between(config: str, good: str, bad: str, latest_patches: bool, python: Optional[str],
                     tf: Optional[str]) -> Tuple[List[str], str, List[str]]:
    """(the versions from `good` to `bad` triage may measure, the nightlies' build flavour or '', the window's
    notes): TF releases (every patch, or the config's own with `latest_patches`), Keras releases at TF `tf`, or the
    nightlies after the good end's branch cut."""
    from .. import asvconf, nightlies, releases

    includes = asvconf.includes(config)
    here = python or asvconf.config_python(includes)
    if nightlies.is_nightly(good) or nightlies.is_nightly(bad):
        if tf:
            versions, notes = nightlies.keras_window(good, bad, here)
            return versions, "", notes
        return nightlies.tf_window(good, bad, here)
    if tf:
        return releases.package_versions("keras", good, bad, here), "", []
    return releases.candidates(good, bad, includes, patches=not latest_patches, python=python), "", []


def run_options(version: str, tf: Optional[str] = None, flavour: str = "") -> List[str]:
    """The `kerasbench run` options of `version`'s environment: `--tf V`, the full build's pin where nightlies of
    the full build were compared, or `--tf TF --keras V` for a Keras release at TF `tf`."""
    from ..versions import is_nightly

    if tf:
        return ["--tf", tf, "--keras", version]
    full = flavour == "cuda" and not is_nightly(version)
    return ["--tf", version] + (["--pin", f"tensorflow=={version}"] if full else [])


def bisect_releases(config: str, good: str, bad: str, template: RunSpec, metric: str, latest_patches: bool,
                    reproduce: List[str], err: TextIO, python: Optional[str] = None,
                    jobs: int = 2, tf: Optional[str] = None, attributing: bool = False,
                    max_steps: Optional[int] = None) -> Tuple[str, Outcome, Dict[str, Record]]:
    """`kerasbench triage`: bisect the TF releases from `good` to `bad`, measuring the pair of `template` in each.

    `template` is the validated runner.RunSpec of the pair (each version gets its asv environment's python,
    on Python `python`, default the config's); `reproduce` is the `kerasbench run` command line that the
    answer ends with, each bracketing release's `--tf` appended. The two ends are measured together, `jobs` at once
    (runner.measure_specs: memory figures are per process; a time is measured alone), then one version a step;
    the environments of the next step are made while the current one measures (environment.Ahead). Progress goes
    to `err`. With `tf`, the Keras releases from `good` to `bad` are bisected at TF release `tf` (each its
    environment's pins with that Keras; forced with --no-deps where TF's requirements exclude it) and
    each reproduce command gets `--tf tf --keras VERSION`. A version like neither end splits the range: each half
    whose ends differ is bisected in turn, within `max_steps` versions measured (triage.bisect). Returns (the
    answer as text, the Outcome, {version: record}).
    """
    import shlex
    import threading

    from .. import asvconf, environment, nightlies, runner
    from ..console import Labelled, Progress, status_line

    started = CLOCK()
    loop, strategy = template.loop, template.strategy
    here = python or asvconf.config_python(asvconf.includes(config))
    versions, flavour, notes = versions_between(config, good, bad, latest_patches, python, tf)
    nightly = nightlies.is_nightly(good) or nightlies.is_nightly(bad)
    expected = steps_needed(len(versions))
    name = "Keras" if tf else "TF"
    for line in notes:
        status_line(err, f"triage: {line}", final=True)
    listed = ' '.join(versions) if len(versions) <= 12 else f"{' '.join(versions[:3])} … {' '.join(versions[-3:])}"
    status_line(err, f"triage: {len(versions)} {name} {'versions' if nightly else 'releases'} from {good} to {bad}"
                     f"{f' on TF {tf}' if tf else ''}: {listed}", final=True)
    budget = max_steps_default(len(versions)) if max_steps is None else max_steps
    status_line(err, f"triage: {loop} × {strategy}, {metric}; {expected} to measure for a change in one step, at "
                     f"most {budget} (--max-steps) where a release like neither end splits it", final=True)
    # one Progress for every step: its lines count the versions measured so far of at most `expected`, the time since
    # triage began and the most left at the pace so far, as run's count its pairs
    progress = Progress(err, expected, template.warmup, clock=CLOCK, at_most=True)
    records: Dict[str, Record] = {}
    created: List[str] = []
    lock = threading.Lock()

    def note(version, text):
        with lock:
            if text.startswith("environment ready"):
                created.append(version)
            status_line(err, f"{name} {version}: {text}", final=True)

    backend = template.backend if template.backend != "tensorflow" else ""
    envs = environment.Ahead(config, lambda v: version_pins(config, v, python, tf, flavour, backend), note, python)

    def measure(chosen, ends=True):  # the versions' records (each with its asv environment's name), kept
        made = [envs.get(v) for v in chosen]
        labels = [f"[step {len(records) + i + 1}/≤{progress.total}] {name} {v}" for i, v in enumerate(chosen)]
        specs = [dataclasses.replace(template, python=path) for path, _ in made]
        # a repro that raises at an end is the file's error, as run says; between the ends, that version is skipped
        measured = runner.measure_specs(specs, jobs, Labelled(progress, labels), metric=metric, repro_raises=ends)
        if len(measured) < len(chosen):  # measure_specs keeps only finished pairs (an end's repro failure raised)
            raise UsageError("triage: an end of the bisection was not measured")
        for version, record, (_, env_name) in zip(chosen, measured, made):
            record["asv_env"] = env_name
            records[version] = record
        return measured

    try:
        ends = [versions[0], versions[-1]]
        envs.want(ends + ([versions[(len(versions) - 1) // 2]] if len(versions) > 2 else []))
        good_end, bad_end = measure(ends)
        judged, reason = ends_judged(metric, good_end, bad_end)
        differ, why = judged in ("regressed", "improved"), f"{judged}: {reason}"
        status_line(err, f"triage: {versions[-1]} vs {versions[0]}: {why}", final=True)

        def classify_version(version, against):
            if version in (versions[0], versions[-1]):
                return ("good" if version == versions[0] else "bad") if differ else "unclear"
            if version not in records and len(records) >= progress.total:  # a half's step: beyond one bisection's
                progress.total += 1
            record = records.get(version) or measure([version], ends=False)[0]
            named = (f"{name} {against[0]}", f"{name} {against[1]}")
            if record["status"] == "failed" and template.repro:  # skipped: one step more, at most
                verdict, reason = SKIPPED, str(repro_failed(template.repro, record))
                progress.total += 1
            else:
                verdict, reason = classify(metric, records[against[0]], records[against[1]], record, named) \
                    if record["status"] == "ok" else \
                    ("unclear", f"like neither end: {record['status']}: {record['reason']}")
            record["triage"] = {"class": verdict, "why": reason}
            status_line(err, f"triage: {name} {version}: {'skipped: ' if verdict == SKIPPED else ''}{reason}",
                        final=True)
            return verdict, reason

        def halves_differ(a, b):  # a half's ends, a version like neither end at one of them: does a step lie between?
            found, why = ends_differ(metric, records[a], records[b])
            status_line(err, f"triage: {b} vs {a}: {why}", final=True)
            return found, why

        outcome = bisect(versions, classify_version, ahead=envs.want if differ else None, differ=halves_differ,
                         max_steps=max_steps)
        outcome.ends, outcome.ends_verdict = why, judged
    finally:
        envs.stop()  # a look-ahead creation no step needs any more: ended, its folder removed

    named = sorted({v for step in outcome.steps for v in step} if len(outcome.steps) > 1 else outcome.bracket,
                   key=versions.index)  # each step's ends, where the change came in more than one
    commands = [shlex.join(reproduce + run_options(version, tf, flavour)) for version in named]
    outcome.pins = {version: envs.pins(version) for version in outcome.bracket}
    text = render(outcome, records, metric, loop, strategy, commands, CLOCK() - started, len(set(created)),
                  name, attributing)
    if nightly:  # the environments it created (looked-ahead ones too): all but the bracket's are removed
        used = envs.made()
        made = {v: path for v, path in used.items() if v in created}
        text += nightly_epilogue(outcome, records, tf, here, notes, made, flavour,
                                 {v: path for v, path in used.items() if v not in made})
    return text, outcome, records


def nightly_epilogue(outcome: Outcome, records: Dict[str, Record], tf: Optional[str], python: str,
                     notes: Sequence[str], made: Dict[str, str], flavour: str,
                     found: Optional[Dict[str, str]] = None) -> str:
    """A nightly triage's ending: the commits between the bracket's two builds, the window's notes, and the
    environments it made removed but the bracket's (the disk they held, and what stays: the nightlies' wheels in
    uv's cache, ~1.3 GB each). One another process still measures in is handed over to it; `found` (the ones this
    triage found made) are removed where their maker handed them over and this triage is the last to use them."""
    from .. import environment, nightlies
    from ..files import tree_size
    from ..units import GIB

    lines = []
    if outcome.first_bad:
        a, b = outcome.last_good, outcome.first_bad
        if tf:  # keras-nightly: the versions record no commit; the build hours bound them
            url = nightlies.keras_commits(nightlies.upload_hour(a, python), nightlies.upload_hour(b, python))
            lines.append(f"Keras commits between {a} and {b} (build hours, UTC): {url}")
        else:
            gits = [(records[v].get("environment") or {}).get("tf_git_version") for v in (a, b)]
            url = nightlies.tf_commits(*gits)
            lines.append(f"TF commits between {a} ({gits[0] or 'no GIT_VERSION'}) and {b} "
                         f"({gits[1] or 'no GIT_VERSION'}): {url or 'not known (a build without a commit)'}")
        outcome.said.append(lines[-1])  # part of the answer: the commits between its two builds
    lines += [f"  {note}" for note in notes]
    if flavour:
        lines.append(f"  build compared: {flavour} (every nightly of one build; the release in the same build)")
    package = nightlies.KERAS if tf else nightlies.FLAVOURS.get(flavour, "")
    kept = set(outcome.bracket)
    removed, freed, gone, busy, taken = 0, 0, 0, 0, 0
    for version, interpreter in {**(found or {}), **made}.items():
        folder, own = os.path.dirname(os.path.dirname(interpreter)), version in made
        if version in kept:
            environment.unmark(folder)  # for the commands below: whoever made it, it stays
            continue
        if not os.path.isdir(folder) or not (own or environment.handed_over(folder)):
            continue
        size, shared = tree_size(folder)
        if not environment.remove_unused(folder, hand_over=True):  # another kerasbench measures in it: handed over
            busy += own
            continue
        removed, freed, gone, taken = removed + size, freed + size - shared, gone + own, taken + (not own)
    held = [tree_size(os.path.dirname(os.path.dirname(made[v]))) for v in kept if v in made]
    if made or taken:
        in_use = f"; handed {busy} over to another kerasbench measuring in it (the last triage to use it removes it)" \
            if busy else ""
        left = f" and {taken} another triage made and left to this one" if taken else ""
        lines.append(f"Environments: removed {gone} this triage made{left} ({removed / GIB:.1f} GiB, "
                     f"{freed / GIB:.1f} GiB "
                     f"of it freed: the rest are hard links into uv's cache, which keeps them"
                     f"{f': `uv cache clean {package}` frees them' if package else ''}){in_use}; kept the bracket's "
                     f"{len(held)} ({sum(h[0] for h in held) / GIB:.1f} GiB, {sum(h[1] for h in held) / GIB:.1f} GiB "
                     "of it linked from uv's cache), for the commands above.")
    return "\n".join(lines) + "\n"
