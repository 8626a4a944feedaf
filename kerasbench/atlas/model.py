"""The atlas' model: columns read against their previous column, a cell's verdict, the marks of a change
(worse, better, a flip), the changes counted, the main axis and the Pythons its columns were measured on.
"""

from __future__ import annotations

import collections
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import rule
from ..column import Column
from ..compare.cells import Groups, pair_order, ratio
from ..compare.judging import figures_verdict
from ..releases import version_key
from ..page import finite



# Worse and better are claims: only between decided readings (an `inconclusive` side, or a settling or step, is
# a different reading, not a better or a worse one: 2.21.0's notebook × reuse_model is not "better" for being
# undecided where 2.12.1 grows).
VERDICT_RANK = {"flat": 0, "grows": 1}
KIND_RANK = {"flat": 0, "retention": 1, "leak": 2}
GLYPHS = {"worse": "▲", "better": "▼", "other": "◆"}
TRACES = ("train_path_traces", "predict_path_traces", "all_traces", "train_traces", "predict_traces")


def _split(version: str) -> Tuple[str, str]:
    """'2.16.2+tf_keras' -> ('2.16.2', 'tf_keras'); '2.21.0' -> ('2.21.0', '') (column.Column's parts)."""
    column = Column.parse(version)
    return column.release, column.label


def previous(version: str, versions: Sequence[str]) -> Optional[str]:
    """The column a column is read against: the last one before it (version order) of an earlier release with the
    same axis label; for a labelled column with none, a backend's or a Python's (2.21.0+torch, 2.21.0+py3.12) the
    plain column of its own release where there is one (what the backend or the Python changes, alone), tf_keras's
    and the rest the last plain release before (not a nightly: tf_keras goes on from Keras 2); else None."""
    return previous_all([*versions, version])[version]


def previous_all(versions: Sequence[str]) -> dict:
    """{column: previous(column)} of every column at once: one sort and one pass, each version's key read once (the
    atlas' cost stays linear in its columns; a column at a time was quadratic: 3000 columns did not finish)."""
    keys = {v: (version_key(_split(v)[0]), version_key(v)) for v in versions}
    plain = {keys[v][0]: v for v in versions if not _split(v)[1]}  # each release's own plain column
    by_release = sorted(keys, key=lambda v: keys[v][0])
    last: dict = {}  # axis label -> its last column (version order) of the releases passed so far
    release = None  # the last plain column of those that is a release, not a nightly
    out, passed = {}, 0
    for v in by_release:
        while passed < len(by_release) and keys[by_release[passed]][0] < keys[v][0]:
            u = by_release[passed]
            label = _split(u)[1]
            if label not in last or keys[u][1] >= keys[last[label]][1]:
                last[label] = u
            if not label and "dev" not in u and (release is None or keys[u][1] >= keys[release][1]):
                release = u  # where a first tf_keras column goes on
            passed += 1
        label = _split(v)[1]
        column = Column.parse(v)
        own = plain.get(keys[v][0]) if column.backend or column.python else None
        out[v] = last.get(label) or (own or release or last.get("") if label else None)
    return out


def verdict(summary) -> str:
    """A cell's verdict: the pair's one verdict (rule.pair_verdict, RSS and heap together); 'n/a' where the summary
    has no RSS verdict."""
    return rule.pair_verdict(summary) if (summary or {}).get("verdict") else "n/a"


def verdicts_text(summary) -> str:
    """The pair's verdict with the RSS and heap verdicts it comes from: 'grows (RSS flat, heap grows)'."""
    return f"{verdict(summary)} (RSS {summary.get('verdict') or 'n/a'}, heap {summary.get('heap_verdict') or 'n/a'})"


def _state(record) -> Optional[Tuple[str, Optional[str]]]:
    if record is None or record.get("status") != "ok":
        return None
    s = record.get("summary") or {}
    return (verdict(s), s.get("growth_kind")) if s.get("verdict") else None


def change(before, after) -> Optional[str]:
    """'worse', 'better' or 'other' when the (pair's verdict, what grew) of two records differ; None when the same or
    either is missing, not ok or has no verdict."""
    a, b = _state(before), _state(after)
    if a is None or b is None or a == b:
        return None
    for rank, i in ((VERDICT_RANK, 0), (KIND_RANK, 1)):
        if a[i] == b[i]:
            continue
        ra, rb = rank.get(a[i]), rank.get(b[i])
        if ra is None or rb is None:  # a side undecided: different, neither worse nor better
            return "other"
        return "worse" if rb > ra else "better"
    return "other"


def mark(before, after) -> Optional[Tuple[str, str]]:
    """(kind, why) of a cell read against the previous column's, or None. compare's rule on the RSS slope first
    (compare.figures_verdict: the CIs apart by more than the floor): regressed is 'worse', improved 'better', whatever
    the labels; where it says neither, the flip of the pair's (verdict, what grew) (`change`): 'worse' or 'better'
    between decided readings, 'other' where a side is undecided (not a change: shown on demand, not counted)."""
    if _state(before) is None or _state(after) is None:
        return None
    judged, why = figures_verdict(before, after)
    if judged in ("regressed", "improved"):
        times = ratio(*(finite_or_none(r["summary"].get("growth_per_iter")) for r in (before, after)))
        size = f", ×{times:.3g}" if times is not None else ""
        return ("worse" if judged == "regressed" else "better"), f"compare: RSS slope {judged}{size} ({why})"
    flip = change(before, after)
    if flip is None:
        return None
    floors = floors_apart(before, after)
    if floors:  # a flip of labels read at other floors: the floors moved, not necessarily the memory
        return "other", f"judged at other floors ({floors}): not counted as a change; compare on the RSS slope: " \
                        f"{judged} ({why})"
    said = "a side is undecided: not counted as a change" if flip == "other" else "the verdict or what grew flipped"
    return flip, f"{said}; compare on the RSS slope: {judged} ({why})"


def floors_apart(before, after) -> str:
    """'' when two cells' floors came from the same kind of source, series by series (calibration, settling,
    default …; unstamped cells: unknown, taken as alike); else what differs: 'heap: settling → the 64 KiB default'.
    A Python without a calibration judges at the default floors: its flips against a calibrated column are the
    floors'."""
    out = []
    for series in ("rss", "heap"):
        kinds = [rule.stamp_kind(((r.get("summary") or {}).get("floors_from") or {}).get(series))
                 for r in (before, after)]
        if None not in kinds and kinds[0] != kinds[1]:
            out.append(f"{'RSS' if series == 'rss' else series}: {kinds[0]} → {kinds[1]}")
    return ", ".join(out)


def finite_or_none(value: Any) -> Optional[float]:
    return float(value) if finite(value) else None


def nightly_then_release(good: str, bad: str) -> bool:
    """Whether the change goes from a nightly to a release (the nightly of 2026-01-15 → 2.21.0, at its branch cut)."""
    ends = [_cli_version(_split(c)[0]).startswith("nightly:") for c in (good, bad)]
    return ends == [True, False]


def rebuilds_in(loop: str) -> bool:
    """Whether `loop` is a built-in loop that builds models (rebuild_no_clear applies): one `ablate` takes apart."""
    from ..loops import LOOPS
    from ..strategies import STRATEGIES

    return loop in LOOPS and "rebuild_no_clear" in STRATEGIES and loop in STRATEGIES["rebuild_no_clear"].applies_to


def _cli_version(release: str) -> str:
    """A column's release as the commands take it: a nightly's label (2.22.0-dev20260514) is nightly:2026-05-14."""
    return Column(release).cli_release


def _keras(column) -> str:
    """'Keras 3.6.0' (or 'tf_keras 2.16.0'): the Keras package of a column's records, '' if none says or they differ."""
    found = {((r.get("environment") or {}).get("keras_package") or "keras", (r.get("environment") or {}).get("keras"))
             for r, _ in column.values() if (r.get("environment") or {}).get("keras")}
    if len(found) != 1:
        return ""
    package, version = next(iter(found))
    return f"{'Keras' if package == 'keras' else package} {version}"


def _python_minor(column) -> Optional[str]:
    """'3.11': the Python of a column's records (the most common, from their environments), None if none says."""
    from ..loading import _python_minor as minor  # compare's rule for a record's Python

    found = collections.Counter(minor(r.get("environment") or {}) for r, _ in column.values())
    found.pop("", None)
    return found.most_common(1)[0][0] if found else None


def other_pythons(groups: Groups) -> Dict[str, str]:
    """{column: 'X.Y'} of the unlabelled columns measured on another Python than most of them (TF 2.8–2.11 on 3.10:
    no wheel for the atlas' own 3.11): their commands must name it (`commands`)."""
    found = {v: _python_minor(column) for v, column in groups.items() if not _split(v)[1]}
    counts = collections.Counter(p for p in found.values() if p)
    own = max(counts, key=lambda p: (counts[p], version_key(p))) if counts else None  # a tie: the newer Python
    return {v: p for v, p in found.items() if p and p != own}


def main_axis(groups: Groups) -> Groups:
    """`groups` with the main Python's columns unlabelled: when a release is measured on several Pythons, compare
    labels each (2.16.2+py3.10, 2.16.2+py3.11, …), also the one on the Python every unlabelled release ran on; that
    one is the release's plain column here, so the releases after it are read against it (not against the release
    before it) and its changes get the triage and attribute commands."""
    pythons = collections.Counter(_python_minor(column) for v, column in groups.items() if not _split(v)[1])
    pythons.pop(None, None)
    if not pythons:
        return groups
    main = f"py{pythons.most_common(1)[0][0]}"
    out = {}
    for v, column in groups.items():
        release, label = _split(v)
        out[release if label == main and release not in groups else v] = column
    return out


def counted_changes(groups: Groups) -> List[Tuple[str, str, str, str]]:
    """(loop, strategy, previous version, version) of each change the list under the map counts (▲ or ▼; not a flip
    with a side undecided), in its order: by pair, then by version."""
    groups = main_axis(groups)
    versions = sorted(groups, key=version_key)
    prev = previous_all(versions)
    out = []
    for pair in sorted({p for g in groups.values() for p in g}, key=pair_order):
        for v in versions:
            p = prev[v]
            marked = mark(groups[p].get(pair, (None, None))[0], groups[v].get(pair, (None, None))[0]) if p else None
            if marked and marked[0] != "other":
                out.append((*pair, p, v))
    return out
