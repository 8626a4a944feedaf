"""Compare records of one machine and one commit across TensorFlow versions, metric by metric.

Every cell (loop, strategy, metric, TF version) gets its value, its ratio to the baseline version
and a verdict read from the per-iteration series and the repeats, not from a bare ratio:

growth_per_iter   regressed when the new slope's 95% CI (Theil-Sen, spanning all repeats) lies
                  above the baseline's and the slopes differ by more than the floor; improved the
                  other way round; unchanged when both runs get the same verdict (grows, flat or
                  inconclusive) and the slopes differ by less than the floor; else inconclusive.
peak_loop,        regressed / improved when the difference is at least 16 MiB and at least 3x the
retained          noise (the larger of the spread across repeats and the residual sd of the RSS
                  series around its line, combined over both versions); unchanged below 16 MiB;
                  inconclusive in between, or when no noise can be measured.
train_traces,     exact counts: any change is regressed (more) or improved (fewer); inconclusive
predict_traces    when the repeats of one version disagree.
objects_per_iter  like peak_loop, with 25 objects/iteration as the minimum and the spread across
                  repeats as the noise (one repeat: the counts are taken at face value).
seconds_per_iter  timings are noisy: unchanged within a 1.5x band; regressed / improved beyond it
                  only when the per-iteration times of the two versions are separated (one-sided
                  Mann-Whitney p < 0.05); else inconclusive.

A cell whose record is missing, not ok, or lacks the metric is n/a. Regressions come first.
"""

import csv
import io
import json
import math
import os
import re

import numpy as np

from . import SCHEMA_VERSION, stats
from .errors import UsageError

KIB, MIB = 1024, 1024**2
HEADLINE = ("growth_per_iter", "peak_loop", "retained", "train_traces", "predict_traces",
            "seconds_per_iter", "objects_per_iter")
VERDICTS = ("regressed", "improved", "inconclusive", "unchanged", "n/a")  # also the output order
FORMATS = ("table", "markdown", "json", "csv")
MIN_RSS = 16 * MIB  # smallest peak/retained difference worth reporting
MIN_OBJECTS = 25  # objects/iteration
NOISE_K = 3.0  # a difference must be this many times the measured noise
TIME_BAND = 1.5  # timing ratios within [1/1.5, 1.5] are noise
ALPHA = 0.05
RECORD_KEYS = {"loop", "strategy", "spec", "status", "repeats", "summary"}
MACHINE_KEYS = ("hostname", "cpu_model", "cpu_count", "memory_total")
_TREE_DIR = re.compile(r"^(?P<commit>[0-9a-f]{8}|nocommit)-(?P<env>.+)$")
_ENV_TF = re.compile(r"tensorflow(?:-cpu)?(\d+\.\d+(?:\.\d+)?)")


def version_key(v):
    """'2.12.1' -> (2, 12, 1) for sorting; non-numeric parts sort last."""
    return tuple(int(p) if p.isdigit() else math.inf for p in re.split(r"[.+-]", str(v)))


# ---------------------------------------------------------------- loading


def _json_files(paths):
    """(path, named) for every path given and every *.json under a folder given."""
    found = []
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found += [(os.path.join(root, f), False) for f in sorted(files) if f.endswith(".json") and not f.startswith(".")]
        elif os.path.exists(path):
            found.append((path, True))
        else:
            raise UsageError(f"Cannot read records from {path}: no such file or folder.")
    return found


def _read(path):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise UsageError(f"Cannot read records from {path}: {e.strerror}.") from None
    except ValueError as e:  # truncated or corrupt
        raise UsageError(f"Cannot parse records file {path}: {e} (truncated or corrupt JSON?).") from None


def _tree_place(path):
    """(host, commit8, env name) when `path` sits in a .asv/records tree, else Nones."""
    folder = os.path.dirname(os.path.abspath(path))
    m = _TREE_DIR.match(os.path.basename(folder))
    if not m:
        return None, None, None
    return os.path.basename(os.path.dirname(folder)), m["commit"], m["env"]


def load(paths):
    """Every usable record under `paths` as [(record, path, tf_version)], checked for consistency."""
    out, schema, machine, commit = [], None, None, None
    for path, named in _json_files(paths):
        payload = _read(path)
        if not (isinstance(payload, dict) and isinstance(payload.get("records"), list)):
            if named:
                raise UsageError(f"Not a kerasbench records file: {path} (expected an object with a 'records' list).")
            continue  # e.g. asv's own JSON files in a .asv tree
        host, file_commit, env_name = _tree_place(path)
        versions = {(r.get("environment") or {}).get("tensorflow") for r in payload["records"] if isinstance(r, dict)} - {None}
        for record in payload["records"]:
            if not isinstance(record, dict) or not RECORD_KEYS <= set(record):
                raise UsageError(f"Not a kerasbench record in {path}: expected the keys {', '.join(sorted(RECORD_KEYS))}.")
            found = record.get("schema", payload.get("schema"))
            if schema is None:
                schema = (found, path)
            elif found != schema[0]:
                raise UsageError(f"Mixed schema versions: {path} has schema {found}, {schema[1]} has schema {schema[0]}.")
            if found != SCHEMA_VERSION:
                raise UsageError(f"Unsupported records schema {found} in {path}: this kerasbench reads schema {SCHEMA_VERSION}.")
            env = dict(record.get("environment") or {})
            if host and not env.get("hostname"):
                env["hostname"] = host
            version = env.get("tensorflow")
            if version is None and len(versions) == 1:
                version = next(iter(versions))  # e.g. the control loop, which never imports TF
            if version is None and env_name and _ENV_TF.search(env_name):
                version = _ENV_TF.search(env_name)[1]
            if version is None:
                continue
            if record.get("environment"):
                ident = {k: env.get(k) for k in MACHINE_KEYS}
                if machine is None:
                    machine = (ident, path)
                else:
                    diff = [k for k in MACHINE_KEYS if ident[k] is not None and machine[0][k] is not None and ident[k] != machine[0][k]]
                    if diff:
                        k = diff[0]
                        raise UsageError(f"Records from different machines: {path} has {k} {ident[k]!r}, "
                                         f"{machine[1]} has {machine[0][k]!r}.")
                    machine[0].update({k: v for k, v in ident.items() if machine[0][k] is None})
            if file_commit:
                if commit is None:
                    commit = (file_commit, path)
                elif file_commit != commit[0]:
                    raise UsageError(f"Records from different commits: {path} is from {file_commit}, {commit[1]} from {commit[0]}.")
            out.append((record, path, str(version)))
    if not out:
        raise UsageError(f"No records with a TensorFlow version found in {', '.join(paths)}.")
    return out


def group(loaded):
    """{version: {(loop, strategy): (record, path)}}; a pair measured twice for one version is an error."""
    groups = {}
    for record, path, version in loaded:
        key = (record["loop"], record["strategy"])
        pairs = groups.setdefault(version, {})
        if key in pairs:
            raise UsageError(f"Duplicate record for TF {version} {key[0]} × {key[1]}: in {path} and in {pairs[key][1]}.")
        pairs[key] = (record, path)
    return groups


# ---------------------------------------------------------------- per-metric rules


def _results(record):
    if record is None or record.get("status") != "ok":
        return []
    return [r["result"] for r in record.get("repeats", []) if r.get("result")]


def _residual_sd(values):
    """Standard deviation of a series around its Theil-Sen line (NaN for fewer than 3 points)."""
    y = np.asarray(values, dtype=float)
    fit = stats.fit_growth(y)
    if not np.isfinite(fit.slope):
        return float("nan")
    x = np.arange(len(y))
    resid = y - np.median(y - fit.slope * x) - fit.slope * x
    return float(np.sqrt(np.sum(resid**2) / (len(y) - 2)))


def _spread(values):
    values = [v for v in values if v is not None]
    return float(np.std(values, ddof=1)) if len(values) >= 2 else float("nan")


def _nanmax(*values):
    values = [v for v in values if v is not None and np.isfinite(v)]
    return max(values) if values else float("nan")


def _per_repeat(metric, res, n):
    if metric == "peak_loop":
        return res["peak_loop_rss"]
    if metric == "retained":
        return res["final_rss"] - res["baseline_rss"]
    if metric == "objects_per_iter":
        return (res["objects_after"] - res["objects_before"]) / n
    return res.get(metric)


def _side(record, metric):
    """What one version contributes to a cell: value, per-repeat values, noise, fit, series."""
    results = _results(record)
    value = record["summary"].get(metric) if results else None
    side = {"value": value, "repeats": len(results)}
    if value is None:
        return side
    n = record["spec"]["iterations"]
    side["per_repeat"] = [_per_repeat(metric, r, n) for r in results] if metric != "growth_per_iter" else None
    floor = record["summary"].get("floor") or stats.DEFAULT_FLOOR
    if metric == "growth_per_iter":
        fit, verdict = stats.combine([stats.fit_growth(r["series"]["rss"]) for r in results], floor)
        side.update(low=fit.low, high=fit.high, verdict=verdict, floor=floor)
    elif metric in ("peak_loop", "retained"):
        series_sd = float(np.nanmedian([_residual_sd(r["series"]["rss"]) for r in results])) \
            if any(len(r["series"]["rss"]) >= 3 for r in results) else float("nan")
        side.update(noise=_nanmax(_spread(side["per_repeat"]), series_sd))
    elif metric == "objects_per_iter":
        side.update(noise=_spread(side["per_repeat"]))
    elif metric == "seconds_per_iter":
        side.update(seconds=[s for r in results for s in r["series"].get("seconds") or []])
    return side


def _growth(base, new):
    floor = max(base["floor"], new["floor"])
    diff = new["value"] - base["value"]
    ci = f"CI [{new['low'] / KIB:+.0f}, {new['high'] / KIB:+.0f}] vs [{base['low'] / KIB:+.0f}, {base['high'] / KIB:+.0f}] KiB/iter"
    if not all(np.isfinite([base["low"], base["high"], new["low"], new["high"]])):
        return "inconclusive", "too few iterations for a slope CI"
    if new["low"] > base["high"] and diff > floor:
        return "regressed", f"{ci}: above, by more than the floor"
    if new["high"] < base["low"] and -diff > floor:
        return "improved", f"{ci}: below, by more than the floor"
    if base["verdict"] == new["verdict"] and abs(diff) < floor:
        return "unchanged", f"both {new['verdict']}, slopes within the floor ({floor / KIB:.0f} KiB/iter)"
    return "inconclusive", f"{ci}; verdicts {base['verdict']} / {new['verdict']}"


def _magnitude(base, new, minimum, fmt):
    diff = new["value"] - base["value"]
    noise = math.hypot(base.get("noise", float("nan")), new.get("noise", float("nan")))
    size = fmt(abs(diff)).lstrip("+")
    if abs(diff) < minimum:
        return "unchanged", f"difference {fmt(diff)} below the minimum {fmt(minimum).lstrip('+')}"
    if not np.isfinite(noise):
        if minimum != MIN_OBJECTS:
            return "inconclusive", f"difference {fmt(diff)}, noise unknown (one repeat, too few iterations)"
        verdict = "regressed" if diff > 0 else "improved"  # object counts of one repeat: taken at face value
        return verdict, f"difference {fmt(diff)} ≥ the minimum {fmt(minimum).lstrip('+')} (one repeat: no spread)"
    if abs(diff) >= NOISE_K * noise:
        return ("regressed" if diff > 0 else "improved"), \
            f"difference {fmt(diff)} ≥ the minimum and ≥ {NOISE_K:g}× noise {fmt(noise).lstrip('+')}"
    return "inconclusive", f"difference {size} within {NOISE_K:g}× noise {fmt(noise).lstrip('+')}"


def _traces(base, new):
    for side in (base, new):
        if len(set(side["per_repeat"])) > 1:
            return "inconclusive", f"repeats disagree: {sorted(set(side['per_repeat']))}"
    b, n = int(base["value"]), int(new["value"])
    if n == b:
        return "unchanged", f"{n} traces in both"
    return ("regressed" if n > b else "improved"), f"{b} -> {n} traces"


def _seconds(base, new):
    from scipy.stats import mannwhitneyu

    ratio = new["value"] / base["value"] if base["value"] else float("inf")
    if 1 / TIME_BAND < ratio < TIME_BAND:
        return "unchanged", f"ratio {ratio:.2f} within the {TIME_BAND:g}x noise band"
    worse = ratio >= TIME_BAND
    if len(base["seconds"]) and len(new["seconds"]):
        p = float(mannwhitneyu(new["seconds"], base["seconds"], alternative="greater" if worse else "less").pvalue)
        if p < ALPHA:
            return ("regressed" if worse else "improved"), f"ratio {ratio:.2f}, per-iteration times separated (p={p:.3f})"
        return "inconclusive", f"ratio {ratio:.2f}, but per-iteration times overlap (p={p:.2f})"
    return "inconclusive", f"ratio {ratio:.2f}, no per-iteration times"


def _mib(v):
    return f"{v / MIB:+.1f} MiB"


def _objs(v):
    return f"{v:+.0f} obj/iter"


def judge(metric, base, new):
    """(verdict, why) for one cell, from the two versions' sides (see _side)."""
    if base["value"] is None or new["value"] is None:
        return "n/a", "no value" + (" for the baseline" if base["value"] is None else "")
    if metric == "growth_per_iter":
        return _growth(base, new)
    if metric in ("peak_loop", "retained"):
        return _magnitude(base, new, MIN_RSS, _mib)
    if metric == "objects_per_iter":
        return _magnitude(base, new, MIN_OBJECTS, _objs)
    if metric in ("train_traces", "predict_traces"):
        return _traces(base, new)
    if metric == "seconds_per_iter":
        return _seconds(base, new)
    raise ValueError(metric)


def _finite(v):
    return v if v is None or math.isfinite(v) else None


def _status(record):
    return "missing" if record is None else record.get("status", "?")


def pick_baseline(versions, baseline=None):
    """`baseline` if it is one of `versions` (sorted), None meaning the oldest; else the one-line error."""
    baseline = versions[0] if baseline is None else baseline
    if baseline not in versions:
        raise UsageError(f"Unknown baseline version. Received: baseline={baseline!r}. Expected one of: {', '.join(versions)}.")
    return baseline


def compare(groups, baseline=None, metrics=HEADLINE):
    """The cells of a comparison, regressions first; `baseline` defaults to the oldest version."""
    versions = sorted(groups, key=version_key)
    if len(versions) < 2:
        raise UsageError(f"Only TF {versions[0]} found: compare needs records of two or more TF versions.")
    baseline = pick_baseline(versions, baseline)
    pairs = sorted({p for g in groups.values() for p in g}, key=_pair_order)
    cells = []
    for loop, strategy in pairs:
        base_rec = groups[baseline].get((loop, strategy), (None, None))[0]
        for metric in metrics:
            base = _side(base_rec, metric) if base_rec else {"value": None, "repeats": 0}
            for version in versions:
                if version == baseline:
                    continue
                rec = groups[version].get((loop, strategy), (None, None))[0]
                new = _side(rec, metric) if rec else {"value": None, "repeats": 0}
                verdict, why = judge(metric, base, new)
                if verdict == "n/a" and (_status(base_rec) != "ok" or _status(rec) != "ok"):
                    why = f"status {_status(base_rec)} / {_status(rec)}"
                bv, nv = _finite(base["value"]), _finite(new["value"])
                cells.append({
                    "loop": loop, "strategy": strategy, "metric": metric, "unit": UNITS[metric][0],
                    "baseline": baseline, "version": version, "baseline_value": bv, "value": nv,
                    "ratio": nv / bv if bv not in (None, 0) and nv is not None else None,
                    "verdict": verdict, "why": why,
                    "baseline_repeats": base["repeats"], "repeats": new["repeats"],
                    "baseline_ci_low": _finite(base.get("low")), "baseline_ci_high": _finite(base.get("high")),
                    "ci_low": _finite(new.get("low")), "ci_high": _finite(new.get("high")),
                    "noise": _finite(math.hypot(base["noise"], new["noise"])) if "noise" in base and "noise" in new else None,
                })
    order = {v: i for i, v in enumerate(VERDICTS)}
    cells.sort(key=lambda c: order[c["verdict"]])  # stable: within a verdict, registry order
    return cells


def _pair_order(pair):
    from .loops import LOOPS
    from .strategies import STRATEGIES

    loops, strategies = list(LOOPS), list(STRATEGIES)
    return (loops.index(pair[0]) if pair[0] in loops else len(loops), pair[0],
            strategies.index(pair[1]) if pair[1] in strategies else len(strategies), pair[1])


# ---------------------------------------------------------------- output

UNITS = {  # metric: (unit, formatter for humans)
    "growth_per_iter": ("bytes/iteration", lambda v: f"{v / KIB:+.0f} KiB/it"),
    "peak_loop": ("bytes", lambda v: f"{v / MIB:.1f} MiB"),
    "retained": ("bytes", lambda v: f"{v / MIB:+.1f} MiB"),
    "train_traces": ("traces", lambda v: f"{v:.0f}"),
    "predict_traces": ("traces", lambda v: f"{v:.0f}"),
    "seconds_per_iter": ("seconds", lambda v: f"{v:.3f} s"),
    "objects_per_iter": ("objects/iteration", lambda v: f"{v:+.0f}/it"),
}
FIELDS = ("loop", "strategy", "metric", "unit", "baseline", "version", "baseline_value", "value", "ratio",
          "verdict", "why", "baseline_repeats", "repeats", "baseline_ci_low", "baseline_ci_high", "ci_low", "ci_high", "noise")
COLUMNS = ("loop", "strategy", "metric", "baseline", "value", "ratio", "verdict", "why")


def _rows(cells):
    rows = []
    for c in cells:
        fmt = UNITS[c["metric"]][1]
        rows.append([
            c["loop"], c["strategy"], c["metric"],
            f"{c['baseline']}: " + ("n/a" if c["baseline_value"] is None else fmt(c["baseline_value"])),
            f"{c['version']}: " + ("n/a" if c["value"] is None else fmt(c["value"])),
            "n/a" if c["ratio"] is None else f"{c['ratio']:.2f}x",
            c["verdict"], c["why"],
        ])
    return rows


def counts(cells):
    found = {v: sum(c["verdict"] == v for c in cells) for v in VERDICTS}
    return ", ".join(f"{n} {v}" for v, n in found.items() if n)


def render_table(cells, context):
    rows = [list(COLUMNS)] + _rows(cells)
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines + ["", context, counts(cells)]) + "\n"


def render_markdown(cells, context):
    def esc(s):
        return s.replace("|", "\\|")

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(esc(s) for s in row) + " |" for row in _rows(cells)]
    return "\n".join([f"**kerasbench compare**: {counts(cells)}", "", context, ""] + lines) + "\n"


def render_json(cells, context, meta):
    return json.dumps({"schema": SCHEMA_VERSION, **meta, "context": context, "cells": cells}, indent=1, allow_nan=False) + "\n"


def render_csv(cells):
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(cells)
    return buf.getvalue()


def describe(groups):
    """One line per version: what it ran on (TF, Keras, Python, numpy, profile/iterations/repeats)."""
    lines, weak = [], False
    for version in sorted(groups, key=version_key):
        recs = [r for r, _ in groups[version].values()]
        env = next((r["environment"] for r in recs if r.get("environment")), {}) or {}
        iters = sorted({r["spec"]["iterations"] for r in recs if r.get("spec")})
        reps = sorted({r["spec"]["repeats"] for r in recs if r.get("spec")})
        lines.append(f"TF {version}: Keras {env.get('keras')}, Python {env.get('python')}, numpy {env.get('numpy')}, "
                     f"{len(recs)} pairs, {'/'.join(map(str, iters))} iterations, {'/'.join(map(str, reps))} repeat(s)")
        weak = weak or min(reps, default=1) < 2 or min(iters, default=0) < 8
    if weak:
        lines.append("note: fewer than 8 iterations or 2 repeats per pair: the verdicts are weak "
                     "(measure with --profile full before you trust them)")
    return "\n".join(lines)


def render(cells, groups, fmt):
    """The comparison as text in `fmt` (one of FORMATS)."""
    context = describe(groups)
    if fmt == "table":
        return render_table(cells, context)
    if fmt == "markdown":
        return render_markdown(cells, context)
    if fmt == "json":
        versions = sorted(groups, key=version_key)
        return render_json(cells, context, {"versions": versions, "baseline": cells[0]["baseline"] if cells else None})
    if fmt == "csv":
        return render_csv(cells)
    raise ValueError(fmt)
