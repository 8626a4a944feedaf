"""Find the first TF release whose memory behaviour differs: bisect over releases in asv's environments.

Each version tried gets an asv environment (kerasbench.environment.python_for: created by asv if
missing, so `asv run --config asv.matrix.json` reuses it) and one measurement of the pair in a
fresh worker there. The ends must differ (kerasbench.compare.judge: regressed or improved). A version
between them is placed on the scale of that change (classify, rule.place: how far from the good end
towards the bad one, with its uncertainty): like the good end, like the bad end, or neither (between
them, or too uncertain to place). A version like neither end, measured against each end, splits the range: the
change came in steps, and each half is bisected against its own ends within --max-steps (a version alike one end
by compare's judgement is that end's); where the budget ends, the bisection stops with the ranges left, rather
than guess. A version a repro file cannot run on is skipped (as `git bisect skip`): the next
nearest to the middle is tried. The same classes serve `kerasbench attribute` (its environments).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import rule
from .compare.judging import cell_side, judge, uncertain_values
from .console import text_table, verdict_text
from .errors import UsageError
from .metrics import judged_metrics
from .record import Record
from .versions import version_key
from .rule import pair_verdict
from .units import KIB, MIB

if TYPE_CHECKING:  # the type only: the command's bisect_releases imports runner (loop shapes, numpy) when it runs
    pass

# What triage and attribute say when, measured again, the two ends of a change do not differ (their answers say it
# as data too, `alike`: the atlas shows such a mark as not confirmed).
ENDS_ALIKE = "the ends do not differ"
# The sentence a triage's answer ends its first line with: how its two ends compare, as compare judged them (the
# direction a change was confirmed in; its answer keeps the verdict as data, `ends`)
ENDS_SAID = "The ends:"
# The class of a version between the ends that a repro file cannot run on (it raised in the worker there: an API that
# release lacks); bisect skips it.
SKIPPED = "skipped"


@dataclass
class Outcome:
    """The answer of a bisection: the last good and first bad versions (None when unknown, or when the change came in
    more than one step: `steps` names each)."""

    versions: List[str]
    tried: Dict[str, str] = field(default_factory=dict)  # version -> class, in the order tried
    last_good: Optional[str] = None
    first_bad: Optional[str] = None
    stopped: Optional[str] = None  # why the bisection ended without an answer
    skipped: List[str] = field(default_factory=list)  # versions between the ends a repro cannot run on (SKIPPED)
    ends: str = ""  # the bad end against the good one, compare's verdict and why ('regressed: CI … vs …')
    bracket: Tuple[str, ...] = ()  # the nearest good and bad versions measured: the change lies between them
    pins: Dict[str, Dict[str, str]] = field(default_factory=dict)  # the bracket's environments' pins (--attribute)
    # each step of the change found (the last version like the one before it, the first unlike), oldest first: one
    # for a change in one step; more where a version like neither end split the range and each half was bisected
    steps: List[Tuple[str, str]] = field(default_factory=list)
    middles: List[str] = field(default_factory=list)  # the versions like neither end that split a range
    against: Dict[str, Tuple[str, str]] = field(default_factory=dict)  # version -> the ends it was classed against,
    # where those are not the triage's own (a version tried in a half)
    alike: bool = False  # the ends measured again do not differ (nothing to bisect)
    ends_verdict: Optional[str] = None  # compare's verdict of the bad end against the good one (regressed, …)
    said: List[str] = field(default_factory=list)  # the answer's lines (render, nightly_epilogue): answers keep them


def steps_needed(n: int) -> int:
    """Versions a bisection over n candidates measures: both ends, then one per halving."""
    return 2 + max(0, math.ceil(math.log2(n - 1))) if n >= 2 else n


def max_steps_default(n: int) -> int:
    """The versions a triage over n candidates measures at most by default: a one-step bisection's, and as many again
    for the halves a version like neither end splits the range into (one split, each half bisected)."""
    return 2 * steps_needed(n) - 2 if n > 2 else n


Classify = Callable[[str, Tuple[str, str]], Union[str, Tuple[str, str]]]


def bisect(versions: Sequence[str], classify: Classify, ahead: Optional[Callable[[List[str]], None]] = None,
           differ: Optional[Callable[[str, str], Tuple[bool, str]]] = None,
           max_steps: Optional[int] = None) -> Outcome:
    """Bisect `versions` (good end first) with `classify(version, ends) -> 'good' | 'bad' | 'unclear' | SKIPPED` (or
    that class and why): `version` against the two measured versions `ends` (like the first, like the second, neither).
    A SKIPPED version is skipped: the untried version nearest the middle of the range left is tried instead, and when
    every version between the nearest good and bad ones failed, the bisection stops there and says so.

    A version like neither end means the change came in more than one step. With `differ(a, b) -> (differ?, why)`
    (two measured versions' behaviours compared), each half of the range it splits whose ends differ is bisected in
    turn, against its own ends, so the answer names every step (`Outcome.steps`); without it, or once `max_steps`
    versions are measured (default max_steps_default), the bisection stops there and names the triages left to run.

    The ends are classified against themselves by the caller's function as well: a good end that is not "good" or a
    bad end that is not "bad" means there is nothing to bisect. `ahead(versions)`, when given, hears before each step
    the versions the step after it may need (either half's middle), so their environments can be made while this step
    measures.
    """
    out = Outcome(list(versions))
    if len(versions) < 2:
        out.stopped = "fewer than two versions to compare"
        return out
    budget = max_steps_default(len(versions)) if max_steps is None else max_steps
    top = (versions[0], versions[-1])
    whys: Dict[str, str] = {}

    def tried(version, ends):
        found = classify(version, ends)
        out.tried[version], whys[version] = (found, "") if isinstance(found, str) else found
        if ends != top:
            out.against[version] = ends
        return out.tried[version]

    def why_of(version):
        return f" ({whys[version]})" if whys.get(version) else ""

    for end, expected in zip(top, ("good", "bad")):
        if tried(end, top) != expected:
            out.alike = True
            out.stopped = f"{ENDS_ALIKE} ({end} is {out.tried[end]}, not {expected})"
            out.bracket = top
            return out

    stops: List[str] = []
    ranges = [(0, len(versions) - 1)]
    while ranges:
        lo, hi = ranges.pop(0)
        ends = (versions[lo], versions[hi])
        while hi - lo > 1:
            untried = [i for i in range(lo + 1, hi) if versions[i] not in out.skipped]
            if not untried:
                between = versions[lo + 1:hi]
                stops.append(f"the change is between {versions[lo]} and {versions[hi]}, and {_listed(between)} "
                             f"between them {'fails' if len(between) == 1 else 'fail'} to run{why_of(between[0])}")
                break
            if len(out.tried) >= budget:
                stops.append(f"a step lies between {versions[lo]} and {versions[hi]}, not bisected: --max-steps "
                             f"{budget} versions measured (triage it: --good {versions[lo]} --bad {versions[hi]})")
                break
            mid = min(untried, key=lambda i: (abs(i - (lo + hi) / 2), i))  # the middle, (lo + hi) // 2, unless skipped
            if ahead is not None:
                ahead([versions[(a + b) // 2] for a, b in ((lo, mid), (mid, hi)) if b - a > 1])
            verdict = tried(versions[mid], ends)
            if verdict == "good":
                lo = mid
            elif verdict == "bad":
                hi = mid
            elif verdict == SKIPPED:
                out.skipped.append(versions[mid])
            else:
                side = _split(out, versions, (lo, mid, hi), whys, differ, ranges, stops)
                if side is None:
                    break
                lo, hi = (mid, hi) if side == "good" else (lo, mid)
        else:
            out.steps.append((versions[lo], versions[hi]))
    out.steps.sort(key=lambda step: versions.index(step[0]))
    if stops:
        found = "; ".join(f"{a} → {b}" for a, b in out.steps)
        out.stopped = "; ".join(stops) + (f" (steps found: {found})" if found else "")
    if len(out.steps) == 1 and not stops:
        out.last_good, out.first_bad = out.steps[0]
    out.bracket = (out.steps[0][0], out.steps[-1][1]) if out.steps and not stops else \
        _narrowed(versions, out) if stops else top
    return out


def _split(out: Outcome, versions: Sequence[str], where: Tuple[int, int, int], whys: Dict[str, str],
           differ: Optional[Callable[[str, str], Tuple[bool, str]]], ranges: List[Tuple[int, int]],
           stops: List[str]) -> Optional[str]:
    """A version like neither end of its range (lo, mid, hi): measured against each end by `differ`. Differing from
    one end only, it is the other's ('good' or 'bad', returned: the bisection goes on; the scale was too uncertain to
    place it). Differing from both, the change came in steps: both halves join `ranges`, each bisected against its own
    ends. None where the bisection of this range ends (the reason in `stops`: no `differ` to measure by, the triages to
    run; differing from neither, too uncertain)."""
    lo, mid, hi = where
    middle, a, b = versions[mid], versions[lo], versions[hi]
    why = f" ({whys[middle]})" if whys.get(middle) else ""
    if differ is None:
        stops.append(f"{middle} behaves like neither end{why}; the change is between {a} and {b}, in more than one "
                     f"step? triage each side: --good {a} --bad {middle}, and --good {middle} --bad {b}")
        return None
    (left, left_why), (right, right_why) = differ(a, middle), differ(middle, b)
    if left and right:
        out.middles.append(middle)
        ranges.extend([(lo, mid), (mid, hi)])
        return None
    if left != right:  # alike one end by compare's judgement (the change's own test of the ends): that end's class
        side = "bad" if left else "good"
        out.tried[middle] = side
        whys[middle] += f"; by compare, {middle} against {b if left else a}: {right_why if left else left_why}"
        return side
    stops.append(f"{middle} behaves like neither end{why}, yet differs from neither: too uncertain to place between "
                 f"{a} and {b} (measure it longer: --profile full)")
    return None


def _narrowed(versions: Sequence[str], out: Outcome) -> Tuple[str, str]:
    """Where a bisection stopped: the nearest versions classed good and bad against the triage's own ends (the
    change lies between them)."""
    top = [v for v in versions if v in out.tried and v not in out.against]
    goods = [v for v in top if out.tried[v] == "good"]
    bads = [v for v in top if out.tried[v] == "bad"]
    return (goods[-1] if goods else versions[0], bads[0] if bads else versions[-1])


def _listed(names: Sequence[str]) -> str:
    """'2.13.1', '2.13.1 and 2.14.1', '2.13.1, 2.14.1 and 2.15.1'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def classify(metric: str, good: Record, bad: Record, record: Record,
             names: Tuple[str, str] = ("the good end", "the bad end")) -> Tuple[str, str]:
    """('good' | 'bad' | 'unclear', why) of `record` on the scale of the change from the good end to the bad one
    (rule.place: how far from good towards bad, with its 95 % interval, from each side's uncertainty): like the good
    end, like the bad end; between them, or too uncertain to place, is unclear. The why says where it lies, the ends
    called `names`: 'like TF 2.15.1 (-3.2 % of the way to TF 2.16.1, ±0.5 %)'. (TF 2.16.1 with tf_keras, -83.9 MiB
    of peak over setup from TF 2.15.1 where TF 2.16.1 is +2.6 GB, is the good end's, not "like neither end".)

    A metric whose rule gives no uncertainty on its own scale (seconds; counts of runs of different lengths) keeps
    compare's verdicts: unchanged against the good end is good, the bad end's change (larger or smaller) is bad.
    """
    sides = {name: cell_side(r, metric) for name, r in (("good", good), ("bad", bad), ("record", record))}
    points = uncertain_values(metric, [sides["good"], sides["bad"], sides["record"]])
    if points is not None:
        where = rule.place(*points)
        found = {"good": "good", "bad": "bad"}.get(where.kind, "unclear")
        return _by_verdict(sides, names, found, where.text(*names)) or (found, where.text(*names))
    by_verdict = _by_verdict(sides, names)
    if by_verdict is not None:
        return by_verdict
    change, _ = judge(metric, sides["good"], sides["bad"])
    verdict, why = judge(metric, sides["good"], sides["record"])
    if verdict == "unchanged":
        return "good", f"like {names[0]}: unchanged against it ({why})"
    if verdict == change:
        return "bad", f"like {names[1]}: {verdict} as it is ({why})"
    return "unclear", f"like neither end: {verdict} against {names[0]} ({why}), where {names[1]} is {change}"


def _by_verdict(sides: dict, names: Tuple[str, str], placed: Optional[str] = None,
                placed_why: str = "") -> Optional[Tuple[str, str]]:
    """A slope's class held to the verdicts `run` prints (rule.judge's, as each record holds them) where the ends'
    verdicts are decided and differ (flat at one, grows at the other): a middle is like an end only when it shares
    that end's verdict; one whose own verdict is inconclusive, or the other end's, is unclear. `placed`: the class the
    scale of the change gave (its why `placed_why`), kept when the verdicts agree with it; None: by the verdicts alone.
    Where both ends share a decided verdict (grows at both, a change of size), a middle whose own verdict is another
    is like neither (TF 2.16.1 flat between two releases that grow: the scale would call it "beyond" one of them).
    None where the ends read alike and the middle with them (the scale decides), or they are not slopes."""
    verdicts = {name: side.get("bare") for name, side in sides.items()}
    good, bad, middle = verdicts["good"], verdicts["bad"], verdicts["record"]
    said = f"{sides['record'].get('series', 'series')} {middle}"
    if good == bad and good in ("flat", "grows") and middle is not None and middle != good:
        return "unclear", (f"like neither end: {said}, where {names[0]} and {names[1]} both read {good}"
                           + (f" ({placed_why})" if placed_why else ""))
    if not ({good, bad} == {"flat", "grows"}):
        return None
    shares = "good" if middle == good else "bad" if middle == bad else None
    if placed is not None:
        if placed == "unclear" or placed == shares:
            return None  # the scale's word stands: between the ends, or like the end whose verdict it shares
        end = names[0] if placed == "good" else names[1]
        return "unclear", (f"{placed_why}; but {said}, where {end} is {good if placed == 'good' else bad} "
                           "(measure it longer: the record's why says the count needed)")
    if shares == "good":
        return "good", f"like {names[0]}: {said}, as {names[0]} ({good}; {names[1]} {bad})"
    if shares == "bad":
        return "bad", f"like {names[1]}: {said}, as {names[1]} ({bad}; {names[0]} {good})"
    return "unclear", (f"neither like {names[0]} ({good}) nor like {names[1]} ({bad}) for certain: {said} "
                       "(measure it longer: the record's why says the count needed)")


def ends_judged(metric: str, good: Record, bad: Record) -> Tuple[str, str]:
    """compare's (verdict, why) of the bad end against the good one."""
    return judge(metric, cell_side(good, metric), cell_side(bad, metric))


def ends_differ(metric: str, good: Record, bad: Record) -> Tuple[bool, str]:
    """(True, why) when the bad end is regressed or improved against the good end."""
    verdict, why = ends_judged(metric, good, bad)
    return verdict in ("regressed", "improved"), f"{verdict}: {why}"


def check_metric(metric: str) -> str:
    """`metric` if triage can bisect on it (a metric compare judges); else the one-line error listing those."""
    choices = judged_metrics()
    if metric not in choices:
        raise UsageError(f"Unknown metric for triage. Received: metric={metric!r}. "
                         f"Expected one of: {', '.join(choices)}.")
    return metric


def check_ends(good: str, bad: str) -> None:
    """UsageError when --good and --bad name the same release: there would be nothing to bisect."""
    def release(v):  # 2.14 and 2.14.0 are one release; names that are not versions are left to releases
        key = tuple(version_key(v))
        return key + (0,) * (3 - len(key)) if all(math.isfinite(k) for k in key) else v

    if good.strip() == bad.strip() or release(good) == release(bad):
        raise UsageError(f"Nothing to bisect: --good and --bad are the same release ({good}). "
                         "Give the release with the behaviour you expect as --good and the changed one as --bad.")


def check_request(metric: str, config: Optional[str], good: str, bad: str, loop: Optional[str],
                  package: str = "tensorflow", tf: Optional[str] = None, jobs: int = 2) -> Tuple[str, str]:
    """(metric, asv config path) of a triage request, after every check that needs nothing measured or made.

    One-line UsageErrors: a metric triage cannot bisect on, no config found, the same release at both ends,
    --package keras without --tf (or --tf without it), no loop (nor --repro), jobs below 1.
    """
    from .asvconf import find_config

    metric = check_metric(metric)
    config = find_config(config)
    check_ends(good, bad)
    if package == "keras" and not tf:
        raise UsageError("--package keras bisects Keras releases at one TF release: give --tf VERSION too.")
    if tf and package != "keras":
        raise UsageError("--tf fixes the TF release while --package keras bisects Keras: give --package keras too.")
    if loop is None:
        raise UsageError("What to triage? Give --loop NAME and --strategy NAME, or --repro FILE.")
    if jobs <= 0:
        raise UsageError(f"Invalid value for argument `jobs`. Received: jobs={jobs!r}. Expected 1 or 2.")
    return metric, config


def _evidence(record, metric):
    """One row of evidence for a version: Keras, growth with CI and verdict, peak, the metric."""
    s, env = record["summary"], record.get("environment") or {}
    if record["status"] != "ok":
        return [env.get("keras") or "?", record["status"], "", "", record["reason"] or ""]
    growth = "n/a" if s["growth_per_iter"] is None else \
        f"{s['growth_per_iter'] / KIB:+.0f} [{s['growth_ci_low'] / KIB:+.0f}, {s['growth_ci_high'] / KIB:+.0f}]"
    value = s.get(metric)
    shown = "" if metric in ("growth_per_iter", "peak_loop") or value is None else f"{metric} {value:.4g}"
    return [env.get("keras") or "?", growth, verdict_text(s), f"{s['peak_loop'] / MIB:.0f}", shown]


def answer(outcome: Outcome, what: str, name: str = "TF", later: Optional[str] = None) -> str:
    """The answer in words, for either direction: the first bad release when the good end is the older one (a
    regression), the release that fixed it when the good end is the newer one (an improvement).

    `later` is the pair's one verdict (rule.pair_verdict) at the release the improvement is found in: it is worded
    "fixed" only when that is `flat`; a change from growing to growing less (or to undecided) is "improved, not
    fixed", saying so."""
    from .versions import is_nightly

    good, bad = outcome.versions[0], outcome.versions[-1]
    if len(outcome.steps) > 1 and not outcome.stopped:
        steps = ", ".join(f"{name} {a} → {b}" for a, b in outcome.steps)
        return (f"Answer: {what} changed in {len(outcome.steps)} steps, each between a {name} release and the next "
                f"one measured that behaves otherwise: {steps} ({_listed(outcome.middles)} "
                f"{'behaves' if len(outcome.middles) == 1 else 'behave'} like neither {good} nor {bad}).")
    if not outcome.first_bad:
        return f"No answer for {what}: {outcome.stopped}."
    unit = "nightly" if is_nightly(outcome.first_bad) and is_nightly(outcome.last_good or "") else \
        "version" if is_nightly(bad) or is_nightly(good) else "release"
    if version_key(good) > version_key(bad):  # going forward in time, bad turned good: an improvement
        found = f"{name} {outcome.last_good}"
        if later == "flat":
            head = f"fixed in {found}"
        else:
            state = {"grows": "still grows", "inconclusive": "is not decided flat (inconclusive)"}.get(
                later or "", "is not known to be flat" if later is None else f"is {later}")
            head = f"improved in {found}, not fixed ({found} {state})"
        return (f"Answer: {head}: it is the first {unit} where {what} behaves like {good} (the good end); the last "
                f"like {bad} (the bad end) is {outcome.first_bad}.")
    return (f"Answer: {name} {outcome.first_bad} is the first {unit} where {what} behaves like {bad}; the last "
            f"like {good} is {outcome.last_good}.")


def others_differ(outcome: Outcome, bisected: str) -> List[Tuple[str, str, str]]:
    """(package, its version at the bracket's good release, at its bad one) for every package beside `bisected`
    (the package triage moves: a TF package, or keras) whose pin differs between the bracket's two environments."""
    from .asvconf import INSTALLER_ONLY, distributions_of, package_of

    if not outcome.first_bad or len(outcome.pins) < 2:
        return []
    good = {package_of(k): v for k, v in outcome.pins[outcome.last_good].items() if k not in INSTALLER_ONLY}
    bad = {package_of(k): v for k, v in outcome.pins[outcome.first_bad].items() if k not in INSTALLER_ONLY}
    # the bisected package under any of its names: a release's, or its nightly's (keras-nightly, tf-nightly[-cpu])
    skip = set(distributions_of(bisected))
    return [(n, good.get(n, "(none)"), bad.get(n, "(none)")) for n in dict.fromkeys(list(good) + list(bad))
            if n not in skip and good.get(n) != bad.get(n)]


def render(outcome: Outcome, records: Dict[str, Record], metric: str, loop: str, strategy: str, commands: Sequence[str],
           seconds: float, created: int, name: str = "TF", attributing: bool = False) -> str:
    """The answer, whether it is the bisected package's alone, the evidence of every version tried (oldest first),
    and how to reproduce it.

    `name` is what was bisected: "TF" (releases), or "Keras" (at one TF release: `triage --package keras`).
    `attributing`: `--attribute` follows (the note says so instead of offering it).
    """
    what = f"{loop} × {strategy} ({metric})"
    fixed_at = records.get(outcome.last_good or "")
    later = None if fixed_at is None else pair_verdict(fixed_at["summary"]) if fixed_at["status"] == "ok" \
        else fixed_at["status"]
    head = answer(outcome, what, name, later)
    if outcome.ends:  # the direction found, which the answer's words do not say (a regression or a fix is the order)
        head += f" {ENDS_SAID} {name} {outcome.versions[-1]} against {name} {outcome.versions[0]}, {outcome.ends}."
    others = others_differ(outcome, "keras" if name == "Keras" else "tensorflow-cpu")
    if others:
        from .asvconf import across_distributions

        moved = ", ".join(f"{n} {a} -> {b}" for n, a, b in others)
        crossed = across_distributions(outcome.pins[outcome.last_good], outcome.pins[outcome.first_bad])
        head += (f"\nNot {name}'s alone: the environments of {outcome.last_good} and {outcome.first_bad} differ in "
                 f"more than {name} ({moved}), so the change may be theirs: "
                 + ("attribute cannot take this bracket apart (a release against a nightly, or two builds: "
                    + ", ".join(f"{g} against {b}" for g, b in crossed) + "; one module under two names)."
                    if crossed else "the attribution below measures which package carries it." if attributing else
                    "add --attribute (or run `kerasbench attribute --good "
                    f"{outcome.last_good} --bad {outcome.first_bad} …`) to measure which package carries it."))
    outcome.said = head.split("\n")
    rows = []
    for version in sorted(outcome.tried, key=version_key):
        keras, growth, verdict, peak, note = _evidence(records[version], metric)
        cls = outcome.tried[version]
        if version in outcome.against and cls in ("good", "bad"):  # tried in a half: like which of its ends
            cls = f"like {outcome.against[version][cls == 'bad']}"
        elif version in outcome.middles:
            cls = "neither: a step each side"
        rows.append([version, keras, growth, verdict, peak, cls, note])
    table = text_table([name, "Keras" if name == "TF" else "Keras ran", "KiB/iter [95% CI]", "verdict", "peak MiB",
                        "class", "note"], rows)
    untried = len(outcome.versions) - len(outcome.tried)
    lines = [head, "", *table, "",
             f"{len(outcome.tried)} of {len(outcome.versions)} releases measured ({untried} skipped by bisection), "
             f"{created} asv environment(s) created, {seconds / 60:.1f} min.",
             "Reproduce:", *(f"  {c}" for c in commands)]
    return "\n".join(lines) + "\n"


def result(outcome: Outcome) -> dict:
    """The answer as `--json` keeps it under "answer" (answers.result): its lines, and what it found as data."""
    from .questions import result as answer_result

    return answer_result(" ".join(line.strip() for line in outcome.said if line.strip()), alike=outcome.alike,
                         ends=outcome.ends_verdict, first_bad=outcome.first_bad, last_good=outcome.last_good,
                         steps=[list(step) for step in outcome.steps])


def summary(outcome: Outcome, metric: str) -> dict:
    """The answer as JSON-ready data."""
    return {"metric": metric, "versions": outcome.versions, "tried": outcome.tried, "last_good": outcome.last_good,
            "first_bad": outcome.first_bad, "stopped": outcome.stopped, "ends": outcome.ends,
            "steps": [list(step) for step in outcome.steps], "middles": outcome.middles,
            "against": {v: list(ends) for v, ends in outcome.against.items()}}

