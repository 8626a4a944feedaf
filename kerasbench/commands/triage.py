"""`kerasbench triage`: bisect TF releases (or Keras releases at one TF: --package keras) for the first whose
behaviour differs, each release's asv environment made and its pair measured.

The bisection, the classes and the answer are kerasbench.triage's (pure); this is the session that makes the
environments (one at a time, ahead of the step that needs them), measures each step and, with --attribute,
attributes the bracket (commands.attribute.bracket).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, TextIO, Tuple

from ..errors import UsageError
from ..triage import Outcome, bisect, classify, ends_differ, render, steps_needed
from . import options

if TYPE_CHECKING:  # types only: the runner loads the loop shapes (numpy) when a command measures
    from ..record import Record
    from ..spec import RunSpec

NAME = "triage"
HELP = "bisect TF releases for the first whose behaviour differs (asv environments)"


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
    options.max_envs(p, "with --attribute: as attribute's")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Bisect, print the answer (and the attribution of its bracket), write --json; exit 0 when it ran."""
    from .. import triage
    from ..files import write_json

    loop = options.loop_of(args)
    metric, args.config = triage.check_request(args.metric, args.config, args.good, args.bad, loop, args.package,
                                               args.tf, args.jobs)
    template = options.template(args, loop)
    options.check_outputs({"--json": args.json}, {"--repro": args.repro, "--config": args.config})
    reproduce = options.reproduce(args, loop)
    text, outcome, records = bisect_releases(args.config, args.good, args.bad, template, metric,
                                             args.latest_patches, reproduce, sys.stderr, args.python,
                                             args.jobs, args.tf, args.attribute)
    out.write(text)
    extra = {}
    if args.attribute:  # the bracket's two environments: which package carries it (records join the triage's)
        from .attribute import bracket

        extra = bracket(args.config, outcome, records, template, metric, reproduce, out, sys.stderr,
                        args.python, args.jobs, args.max_envs)
    if args.json:
        from ..record import records_payload

        write_json(args.json, records_payload(records.values(), triage=triage.summary(outcome, metric), **extra))
        out.write(f"wrote {len(records)} record(s) to {args.json} (kerasbench compare / report read it)\n")
    return 0


class Environments:
    """The asv environments of the versions triage measures, made one at a time in a background thread.

    `want(versions)` queues them (the next bisection step's, while this one measures); `get(version)`
    waits for one (queued first if it was not). A creation that fails is said only when that version is
    needed. `stop()` ends a creation under way (its folder is removed, as after any interrupted one) and
    drops the queued ones.
    """

    def __init__(self, config: str, python: Optional[str], note: Callable[[str, str], None], tf: Optional[str] = None,
                 flavour: str = ""):
        from concurrent.futures import ThreadPoolExecutor

        from .. import asvconf

        self.config, self.python, self.note, self.tf, self.flavour = config, python, note, tf, flavour
        self.includes = asvconf.includes(config)
        self.futures: Dict[str, object] = {}
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kerasbench-env")

    def _make(self, version: str) -> Tuple[str, str]:
        from .. import environment

        return environment.python_for(self.config, self.pins(version), lambda text: self.note(version, text),
                                      self.python)

    def pins(self, version: str) -> Dict[str, str]:
        """The pins of `version`'s environment: a TF release's, or TF `tf`'s with that Keras (`--package keras`)."""
        from .. import environment, nightlies, releases

        if self.tf:
            return environment.requirements_with(self.config, self.tf, self.python, keras=version)[0]
        python = self.python or releases.config_python(self.includes)
        if nightlies.is_nightly(version):
            return nightlies.tf_requirements(nightlies.resolve_tf(version, python, self.flavour)[0], self.includes,
                                             python)
        # like with like: a release compared with full-build nightlies in its full build (run --pin tensorflow==V)
        full = {"tensorflow": version} if self.flavour == "cuda" else None
        return environment.requirements_with(self.config, version, self.python, full)[0]

    def want(self, versions: Sequence[str]) -> None:
        """Queue the environments of `versions` (those not queued yet)."""
        for version in versions:
            if version not in self.futures:
                self.futures[version] = self.pool.submit(self._make, version)

    def get(self, version: str) -> Tuple[str, str]:
        """(interpreter, environment name) of `version`, made now if it was not queued."""
        from concurrent.futures import TimeoutError as Pending

        self.want([version])
        future = self.futures[version]
        while True:
            try:
                return future.result(timeout=0.2)  # short waits: the main thread takes Ctrl-C in between
            except Pending:
                continue

    def stop(self) -> None:
        """Drop the queued creations and end the one under way (asvconf removes its half-made folder)."""
        from .. import environment

        for future in self.futures.values():
            future.cancel()
        if not all(f.done() for f in self.futures.values()):
            environment.end_creations()
        self.pool.shutdown(wait=True, cancel_futures=True)


def bisect_releases(config: str, good: str, bad: str, template: RunSpec, metric: str, latest_patches: bool,
                    reproduce: List[str], err: TextIO, python: Optional[str] = None,
                    jobs: int = 2, tf: Optional[str] = None,
                    attributing: bool = False) -> Tuple[str, Outcome, Dict[str, Record]]:
    """`kerasbench triage`: bisect the TF releases from `good` to `bad`, measuring the pair of `template` in each.

    `template` is the validated runner.RunSpec of the pair (each version gets its asv environment's python,
    on Python `python`, default the config's); `reproduce` is the `kerasbench run` command line that the
    answer ends with, each bracketing release's `--tf` appended. With jobs 2 both ends are measured at once
    (memory figures are per process; their seconds per iteration under contention, and the records' spec
    says jobs 2); the environments of the next step are made while the current one measures. Progress goes
    to `err`. With `tf`, the Keras releases from `good` to `bad` are bisected at TF release `tf` (each its
    environment's pins with that Keras; forced with --no-deps where TF's requirements exclude it) and
    each reproduce command gets `--tf tf --keras VERSION`. Returns (the answer as text, the Outcome,
    {version: record}).
    """
    import dataclasses
    import shlex
    import threading
    import time

    from .. import asvconf, releases, runner
    from ..console import Labelled, Progress, status_line
    from ..errors import repro_failed
    from ..spec import shared_memory_cap

    from .. import nightlies

    started = time.monotonic()
    loop, strategy = template.loop, template.strategy
    includes = asvconf.includes(config)
    here = python or releases.config_python(includes)
    nightly, flavour, notes = nightlies.is_nightly(good) or nightlies.is_nightly(bad), "", []
    if nightly and tf:
        versions, notes = nightlies.keras_window(good, bad, here)
    elif nightly:
        versions, flavour, notes = nightlies.tf_window(good, bad, here)
    elif tf:
        versions = releases.package_versions("keras", good, bad, here)
    else:
        versions = releases.candidates(good, bad, includes, patches=not latest_patches, python=python)
    expected = steps_needed(len(versions))
    name = "Keras" if tf else "TF"
    for line in notes:
        status_line(err, f"triage: {line}", final=True)
    listed = ' '.join(versions) if len(versions) <= 12 else f"{' '.join(versions[:3])} … {' '.join(versions[-3:])}"
    status_line(err, f"triage: {len(versions)} {name} {'versions' if nightly else 'releases'} from {good} to {bad}"
                     f"{f' on TF {tf}' if tf else ''}: {listed}", final=True)
    status_line(err, f"triage: {loop} × {strategy}, {metric}; at most {expected} to measure", final=True)
    records: Dict[str, Record] = {}
    created: List[str] = []
    lock = threading.Lock()

    def note(version, text):
        with lock:
            if text.startswith("environment ready"):
                created.append(version)
            status_line(err, f"{name} {version}: {text}", final=True)

    envs = Environments(config, python, note, tf, flavour)

    def spec_for(version, at_once=1):
        path, env_name = envs.get(version)
        spec = dataclasses.replace(template, python=path)
        if at_once > 1:  # the default memory cap shared between the workers running at once
            spec = dataclasses.replace(spec, jobs=at_once, memory_cap=shared_memory_cap(at_once))
        return spec, env_name

    def keep(version, record, env_name):
        record["asv_env"] = env_name
        if template.repro and record["status"] == "failed":
            raise repro_failed(template.repro, record)
        records[version] = record
        return record

    def measure_version(version):
        spec, env_name = spec_for(version)
        step = len(records) + 1
        progress = Progress(err, expected, spec.warmup)
        progress.start(step, loop, strategy, spec.iterations, spec.budget)
        progress.label = f"[step {step}/≤{expected}] {name} {version}: {loop} × {strategy}"
        record = runner.measure(spec, progress=progress)
        progress.done(record)
        return keep(version, record, env_name)

    try:
        ends = [versions[0], versions[-1]]
        envs.want(ends + ([versions[(len(versions) - 1) // 2]] if len(versions) > 2 else []))
        at_once = 1 if metric == "seconds_per_iter" else min(jobs, 2)  # a time compared alone, never under contention
        if at_once > 1:
            made = [spec_for(v, at_once) for v in ends]
            labels = [f"[step {i + 1}/≤{expected}] {name} {v}" for i, v in enumerate(ends)]
            measured = runner.measure_at_once([s for s, _ in made], at_once,
                                               Labelled(Progress(err, expected, template.warmup), labels), None)
            if len(measured) < 2:  # measure_at_once keeps only finished pairs; a repro failure raised already
                raise UsageError("triage: an end of the bisection was not measured")
            for version, record, (_, env_name) in zip(ends, measured, made):
                keep(version, record, env_name)
            good_end, bad_end = records[ends[0]], records[ends[1]]
        else:
            good_end, bad_end = measure_version(ends[0]), measure_version(ends[1])
        differ, why = ends_differ(metric, good_end, bad_end)
        status_line(err, f"triage: {versions[-1]} vs {versions[0]}: {why}", final=True)

        def classify_version(version):
            if version == versions[0]:
                return "good" if differ else "unclear"
            if version == versions[-1]:
                return "bad" if differ else "unclear"
            record = records.get(version) or measure_version(version)
            ends = (f"{name} {versions[0]}", f"{name} {versions[-1]}")
            verdict, reason = classify(metric, good_end, bad_end, record, ends) if record["status"] == "ok" \
                else ("unclear", f"like neither end: {record['status']}: {record['reason']}")
            record["triage"] = {"class": verdict, "why": reason}
            status_line(err, f"triage: {name} {version}: {reason}", final=True)
            return verdict, reason

        outcome = bisect(versions, classify_version, ahead=envs.want if differ else None)
    finally:
        envs.stop()  # a look-ahead creation no step needs any more: ended, its folder removed
    def where(v):  # a release compared with full-build nightlies: its full build
        if tf:
            return ["--tf", tf, "--keras", v]
        full = flavour == "cuda" and not nightlies.is_nightly(v)
        return ["--tf", v] + (["--pin", f"tensorflow=={v}"] if full else [])

    commands = [shlex.join(reproduce + where(version)) for version in outcome.bracket]
    outcome.pins = {version: envs.pins(version) for version in outcome.bracket}
    text = render(outcome, records, metric, loop, strategy, commands, time.monotonic() - started, len(set(created)),
                  name, attributing)
    if nightly:  # the environments it created (looked-ahead ones too): all but the bracket's are removed
        made = {v: envs.futures[v].result()[0] for v in set(created)
                if envs.futures[v].done() and not envs.futures[v].cancelled() and not envs.futures[v].exception()}
        text += nightly_epilogue(outcome, records, tf, here, notes, made, flavour)
    return text, outcome, records


def nightly_epilogue(outcome: Outcome, records: Dict[str, Record], tf: Optional[str], python: str,
                     notes: Sequence[str], made: Dict[str, str], flavour: str) -> str:
    """A nightly triage's ending: the commits between the bracket's two builds, the window's notes, and the
    environments it made removed but the bracket's (the disk they held, and what stays)."""
    import shutil

    from .. import nightlies
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
    lines += [f"  {note}" for note in notes]
    if flavour:
        lines.append(f"  build compared: {flavour} (every nightly of one build; the release in the same build)")
    kept = set(outcome.bracket)
    removed, freed, gone = 0, 0, 0
    for version, interpreter in made.items():
        folder = os.path.dirname(os.path.dirname(interpreter))
        if version in kept or not os.path.isdir(folder):
            continue
        size, shared = tree_size(folder)
        shutil.rmtree(folder, ignore_errors=True)
        removed, freed, gone = removed + size, freed + size - shared, gone + 1
    held = [tree_size(os.path.dirname(os.path.dirname(made[v]))) for v in kept if v in made]
    if made:
        lines.append(f"Environments: removed {gone} this triage made ({removed / GIB:.1f} GiB, {freed / GIB:.1f} GiB "
                     f"of it freed: the rest are hard links into uv's cache); kept the bracket's "
                     f"{len(held)} ({sum(h[0] for h in held) / GIB:.1f} GiB, {sum(h[1] for h in held) / GIB:.1f} GiB "
                     "of it linked from uv's cache), for the commands above.")
    return "\n".join(lines) + "\n"
