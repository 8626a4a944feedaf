"""The records a comparison reads: loaded from the paths given (two sides of one release told apart) and grouped by
version and pair, every record judged by one protocol, each pair measuring one body.
"""

from __future__ import annotations

import os
import re
from typing import Dict, List, Sequence, Tuple

from .. import machine as machines, rule
from ..column import Column
from ..errors import UsageError
from ..loading import load_records
from ..record import Record
from ..tree import place_of
from ..trace.records import traced
from ..versions import version_key
from .cells import Groups


def load(paths: Sequence[str]) -> List[Tuple[Record, str, str]]:
    """loading.load_records over `paths`, where two path arguments may hold the same TF release.

    A pull request's records against the ones main published, or one release before and after a change: when
    two arguments share a release, each argument is a side of its own and its versions are labelled
    `<release>+<label>` (the commit of its records tree, else its file name), in the order given, so the
    first argument is the baseline. Without a shared release, or when one load over all of them (one commit)
    measures no pair twice for a release (it labels a release's Pythons apart: 2.16.2+py3.10), that load.
    """
    if len(paths) < 2:
        return load_records(paths)
    sides = [load_records([path]) for path in paths]
    releases = [{version for _, _, version in side} for side in sides]
    if all(a.isdisjoint(b) for i, a in enumerate(releases) for b in releases[i + 1:]):
        return load_records(paths)
    try:  # one release on several Pythons (`run --tf V --python X.Y` files): one load labels them <release>+pyX.Y
        joint = load_records(paths)
    except UsageError:  # records of two commits: a pull request's against main's
        joint = []
    from .. import public  # a report's records are the loop report:<name>, not one loop repro measured twice

    measured = [(version, r["loop"], r["strategy"]) for r, _, version in public.relabel(joint)]
    if joint and len(measured) == len(set(measured)):
        return joint
    labels = []
    for path, side in zip(paths, sides):
        commit = place_of(side[0][1])[1]
        label = commit if commit and commit != "nocommit" else os.path.splitext(os.path.basename(path.rstrip("/")))[0]
        label = re.sub(r"[^A-Za-z0-9.]+", ".", label).strip(".") or "side"
        labels.append(label if label not in labels else f"{label}.{len(labels) + 1}")
    return [(record, path, str(Column(version, label)))
            for side, label in zip(sides, labels) for record, path, version in side]


def group(loaded: Sequence[Tuple[Record, str, str]], rejudge: bool = False) -> Groups:
    """{version: {(loop, strategy): (record, path)}}; a pair measured twice for one version is an error, and so are
    records judged by two protocols, unless `rejudge` judges every record of another protocol again from its series
    (summary.rejudged) first. A public report's records are the pair report:<name> × strategy (public.relabel)."""
    from .. import public

    loaded = public.relabel(loaded)
    if rejudge:
        loaded = [(rejudge_record(record, path), path, version) for record, path, version in loaded]
    rule.one_version((record, path) for record, path, _ in loaded)
    groups: Groups = {}
    mixed: Dict[bool, str] = {}  # traced or not: a path of each
    for record, path, version in loaded:
        mixed.setdefault(traced(record), path)
        if len(mixed) > 1:
            raise UsageError(f"Traced and untraced records: {mixed[True]} was measured with `run --trace`, "
                             f"{mixed[False]} without; a trace moves the memory figures: compare traced with "
                             "traced, or run again without --trace.")
        key = (record["loop"], record["strategy"])
        pairs = groups.setdefault(version, {})
        if key in pairs:
            where = [machines.label(r.get("environment")) for r in (pairs[key][0], record)]
            hint = (f" (machines {where[0]} and {where[1]}: compare one machine's folder, e.g. .asv/records/{where[0]})"
                    if where[0] != where[1] else "")
            raise UsageError(f"Duplicate record for TF {version} {key[0]} × {key[1]}: "
                             f"in {path} and in {pairs[key][1]}{hint}.")
        pairs[key] = (record, path)
    _one_body(groups)
    return groups


def rejudge_record(record: Record, path: str) -> Record:
    """The record judged by this kerasbench's protocol: as it is when it was, else again from its stored series; a
    UsageError naming `path` when it holds no series to judge (an atlas data file keeps summaries only)."""
    from .. import summary
    from ..rule import PROTOCOL_VERSION

    if rule.version_of(record.get("summary")) == PROTOCOL_VERSION or record.get("status") != "ok":
        return record
    if not any(((r.get("result") or {}).get("series") or {}).get("rss") for r in record.get("repeats") or ()):
        raise UsageError(f"Cannot re-judge {path}: {record.get('loop')} × {record.get('strategy')} keeps no "
                         "series (an atlas data file keeps summaries only); give the records it was made from.")
    return summary.rejudged(record)


def _one_body(groups: Groups) -> None:
    """UsageError when a pair's records measured different bodies (`measure(body=...)`: loop repro × reuse_model for
    every function): their figures are not one loop on two versions. Records without the body's name (older ones,
    repro files, loop shapes) are compared as they always were."""
    for key in {p for g in groups.values() for p in g}:
        seen: Dict[Tuple[str, str], str] = {}  # (name, sha) -> the first version that measured it
        for version in sorted(groups, key=version_key):
            spec = groups[version].get(key, ({}, ""))[0].get("spec") or {}
            if spec.get("body"):
                seen.setdefault((spec["body"], spec.get("body_sha256") or "?"), version)
        if len(seen) > 1:
            (a, a_sha), (b, b_sha) = list(seen)[:2]
            va, vb = seen[(a, a_sha)], seen[(b, b_sha)]
            what = (f"two sources of the body {a} (sha256 {a_sha} on {va}, {b_sha} on {vb})" if a == b else
                    f"different bodies: {a} (sha256 {a_sha}) on {va} and {b} (sha256 {b_sha}) on {vb}")
            raise UsageError(f"The records of {key[0]} × {key[1]} measured {what}; compare measures one body across "
                             "versions: measure the same function on each side.")
