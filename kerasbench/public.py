"""Public reports as rows: the well-known TF/Keras memory-leak reports as repro files, and kerasbench's answer to each.

Each report is a repro file in kerasbench/examples/reports/ (the usual contract, kerasbench.repro) whose module-level
metadata states the claim: URL, TITLE, CLAIMED_GROWS (the releases the reporter saw it grow on: "2.13" names every
2.13.x), CLAIMED_FLAT (releases the reporter says are fine), SYMPTOM, and STRATEGY (the strategy that is the
reporter's loop). REPORTS is read from those files (parsed, never imported: the parent never imports TensorFlow),
in the order of NAMES; a file not in NAMES, or a name without its file, is what tests/test_public.py refuses.

Records of a report's file (loop repro, spec.repro naming examples/reports/<name>.py) are the pair
`report:<name>` × strategy wherever records are grouped (compare.group calls relabel: compare, report, the atlas'
rows), and `kerasbench reports RECORDS...` puts them in a table: the claim, the
verdict and RSS slope per measured release, and whether that agrees with the claim (agreement, a pure rule).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from .column import Column
from .errors import UsageError

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "examples", "reports")
# The reports, oldest first: each is FOLDER/<name>.py (declared beside the files).
from .examples.reports import NAMES as NAMES  # noqa: E402
FIELDS = ("URL", "TITLE", "CLAIMED_GROWS", "CLAIMED_FLAT", "SYMPTOM", "STRATEGY")
LOOP_PREFIX = "report:"

# The answers of the agreement rule.
YES, NO, NOT_MEASURED, INCONCLUSIVE = "yes", "no", "not measured on the claimed release", "inconclusive"


@dataclass(frozen=True)
class Report:
    """One public report: where it is, what it claims, and which strategy is the reporter's loop."""

    name: str
    url: str
    title: str
    claimed_grows: Tuple[str, ...]
    claimed_flat: Tuple[str, ...]
    symptom: str
    strategy: str

    @property
    def path(self) -> str:
        return os.path.join(FOLDER, f"{self.name}.py")

    @property
    def loop(self) -> str:
        """Its row's name in the atlas and the table."""
        return LOOP_PREFIX + self.name

    @property
    def claim(self) -> str:
        flat = f"; fine on {_releases(self.claimed_flat)}" if self.claimed_flat else ""
        return f"grows on {_releases(self.claimed_grows)}{flat}: {self.symptom}"

    def command(self, tf: str = "") -> str:
        """The `kerasbench run` that measures it (in release `tf` where given), as the atlas re-measurement runs it."""
        release = f" --tf {tf}" if tf else ""
        return (f"kerasbench run --repro kerasbench/examples/reports/{self.name}.py --strategy {self.strategy}"
                f"{release} --json {self.name}{'-' + tf if tf else ''}.json")


def _releases(claims: Sequence[str]) -> str:
    """'TF 2.11.x, 2.12.x' of a claim's releases (each names every patch release of it)."""
    return "TF " + ", ".join(f"{c}.x" for c in claims)


def metadata(path: str) -> Dict[str, object]:
    """The FIELDS a report file assigns at top level (literals only), read without running it; ValueError names a
    missing or non-literal one."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    found: Dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in FIELDS:
                try:
                    found[node.targets[0].id] = ast.literal_eval(node.value)
                except ValueError:
                    raise ValueError(f"{path}: {node.targets[0].id} is not a literal") from None
    missing = [f for f in FIELDS if f not in found]
    if missing:
        raise ValueError(f"{path} lacks the report metadata {', '.join(missing)}")
    return found


def read(name: str) -> Report:
    """The Report of FOLDER/<name>.py."""
    m = metadata(os.path.join(FOLDER, f"{name}.py"))
    return Report(name, str(m["URL"]), str(m["TITLE"]), tuple(m["CLAIMED_GROWS"]), tuple(m["CLAIMED_FLAT"]),
                  str(m["SYMPTOM"]), str(m["STRATEGY"]))


REPORTS: Tuple[Report, ...] = tuple(read(n) for n in NAMES)
BY_NAME = {r.name: r for r in REPORTS}


def select(text: str) -> List[Report]:
    """The reports a comma list (or 'all') names; UsageError for a name that is not one."""
    if text.strip() == "all":
        return list(REPORTS)
    out = []
    for name in (n.strip() for n in text.split(",")):
        if name not in BY_NAME:
            raise UsageError(f"Unknown report {name!r}; the reports: {', '.join(NAMES)} (or all).")
        out.append(BY_NAME[name])
    return out


def report_of(record: Mapping) -> Optional[Report]:
    """The report a record measured: loop repro of a file named <name>.py in a folder `reports`; else None."""
    if not isinstance(record, Mapping) or record.get("loop") != "repro":
        return None
    path = str((record.get("spec") or {}).get("repro") or "")
    folder, base = os.path.split(path)
    name, ext = os.path.splitext(base)
    return BY_NAME.get(name) if ext == ".py" and os.path.basename(folder) == "reports" else None


def relabel(loaded: Sequence[Tuple[dict, str, str]]) -> List[Tuple[dict, str, str]]:
    """compare.load's [(record, path, version)] with each report's records as loop `report:<name>` (a row of its own:
    two reports measured with one strategy are two rows, not a duplicate loop repro)."""
    out = []
    for record, path, version in loaded:
        report = report_of(record)
        out.append(({**record, "loop": report.loop} if report else record, path, version))
    return out


def covers(release: str, claims: Sequence[str]) -> bool:
    """Whether a measured release ('2.13.1', '2.16.2+tf_keras') is one a claim names ('2.13' names 2.13.x, '1' 1.x)."""
    release = Column.parse(release).release
    if "dev" in release:  # a nightly (2.21.0-dev20250819) is not the release a reporter names
        return False
    return any(release == c or release.startswith(c + ".") for c in claims)


def agreement(claimed_grows: Sequence[str], claimed_flat: Sequence[str], readings: Mapping[str, str]) -> str:
    """Whether kerasbench's verdicts agree with a claim (pure): `readings` is {measured release: verdict}.

    Only the releases the claim names count: one it says grows must read `grows`, one it says is fine `flat`.
    Any decided reading against the claim: no; else any decided reading for it: yes; claimed releases measured but
    none decided (inconclusive, failed, n/a): inconclusive; no claimed release measured: not measured."""
    said = sides(claimed_grows, claimed_flat, readings)
    if not any(said.values()):
        return NOT_MEASURED
    return NO if said["against"] else YES if said["with it"] else INCONCLUSIVE


def sides(claimed_grows: Sequence[str], claimed_flat: Sequence[str],
          readings: Mapping[str, str]) -> Dict[str, List[str]]:
    """The readings on the releases a claim names, by side: {"against": ['2.11.1 flat'], "with it": [...],
    "undecided": [...]}, releases in order (a release the claim says grows must read grows; one it says is fine,
    flat); what agreement and evidence both read."""
    from .versions import version_key

    out: Dict[str, List[str]] = {"against": [], "with it": [], "undecided": []}
    for release in sorted(readings, key=version_key):
        want = "grows" if covers(release, claimed_grows) else "flat" if covers(release, claimed_flat) else None
        if want:
            got = readings[release]
            side = "undecided" if got not in ("grows", "flat") else "with it" if got == want else "against"
            out[side].append(f"{release} {got}")
    return out


# ---------------------------------------------------------------- the table (`kerasbench reports`, the atlas page)


def _number(value) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _reading(record) -> Tuple[str, Optional[float], Optional[float]]:
    """(verdict, RSS slope, heap slope) of a record, slopes in bytes/iteration (None: not read); the verdict is the
    pair's one (RSS and heap together), or the record's status ('failed', 'skipped') where it did not finish."""
    from .rule.series import pair_verdict

    if record.get("status") != "ok":
        return str(record.get("status") or "failed"), None, None
    summary = record.get("summary") or {}
    return (pair_verdict(summary) if summary.get("verdict") else "n/a", _number(summary.get("growth_per_iter")),
            _number(summary.get("heap_growth_per_iter")))


def _at_default(record) -> Optional[float]:
    """The RSS floor (bytes/iteration) when the record was judged at the no-calibration default, else None: a
    reader must see that a `flat` there means no more than 'under 64 KiB/iteration'."""
    from .rule.floors import stamp_kind

    summary = record.get("summary") or {}
    stamp = (summary.get("floors_from") or {}).get("rss")
    return _number(summary.get("floor")) if stamp_kind(stamp) == "default" else None


def rows(groups: Mapping[str, Mapping[Tuple[str, str], Tuple[dict, str]]]) -> Tuple[List[str], List[dict]]:
    """(the versions that measured a report, [one row per report measured]) from compare's groups (relabelled).

    A row: report, answers {version: (verdict, RSS slope, heap slope)} of the report's own strategy, agrees
    (agreement)."""
    from .versions import version_key

    versions = sorted((v for v, pairs in groups.items()
                       if any(loop.startswith(LOOP_PREFIX) for loop, _ in pairs)), key=version_key)
    out = []
    for report in REPORTS:
        records = {v: groups[v][(report.loop, report.strategy)][0]
                   for v in versions if (report.loop, report.strategy) in groups[v]}
        if records:
            answers = {v: _reading(r) for v, r in records.items()}
            verdicts = {v: reading[0] for v, reading in answers.items()}
            out.append({"report": report, "answers": answers,
                        "defaults": {v: f for v, f in ((v, _at_default(r)) for v, r in records.items()) if f},
                        "agrees": agreement(report.claimed_grows, report.claimed_flat, verdicts),
                        "because": evidence(report, verdicts)})
    return versions, out


def evidence(report: Report, verdicts: Mapping[str, str]) -> str:
    """The readings on the releases the claim names, the ones the agreement rests on, against it first: 'against:
    2.11.1 flat; with it: 2.9.3 flat, 2.12.1 grows' ('' when no claimed release was measured)."""
    said = sides(report.claimed_grows, report.claimed_flat, verdicts)
    return "; ".join(f"{side}: {', '.join(releases)}" for side, releases in said.items() if releases)


def _agrees(row: dict) -> str:
    return f"{row['agrees']} ({row['because']})" if row.get("because") else row["agrees"]


def _answer(reading, default: Optional[float] = None) -> str:
    """'grows: RSS +3,979.3, heap +5,154.6 KiB/it' (the heap where it was read), 'failed', 'not measured'; judged at
    the no-calibration `default` floor: said ('at the 64 KiB default floor')."""
    if reading is None:
        return "not measured"
    verdict, rss, heap = reading
    slopes = [f"{what} {v / 1024:+,.1f}" for what, v in (("RSS", rss), ("heap", heap)) if v is not None]
    at = f" ({default / 1024:g} KiB default floor: no calibration)" if default else ""
    return f"{verdict}: {', '.join(slopes)} KiB/it{at}" if slopes else verdict


def render(groups, fmt: str = "markdown") -> str:
    """The table as markdown (`| report | claim | TF v ... | agrees with the claim? |`) or aligned text."""
    versions, table = rows(groups)
    if not table:
        return "No record measured a public report (kerasbench/examples/reports); `kerasbench reports`, given no " \
               "records, prints the runs that do.\n"
    head = ["report", "claim"] + [f"TF {v}" for v in versions] + ["agrees with the claim?"]
    body = []
    for row in table:
        r = row["report"]
        link = f"[{r.name}]({r.url})" if fmt == "markdown" else r.name
        body.append([link, r.claim] + [_answer(row["answers"].get(v), row["defaults"].get(v)) for v in versions]
                    + [_agrees(row)])
    if fmt == "markdown":
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in line) + " |" for line in body]
        return "\n".join(lines) + "\n"
    widths = [min(60, max(len(line[i]) for line in [head] + body)) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in [head] + body) + "\n"


def html(groups) -> str:
    """The table as a section of the atlas page ('' when no record measured a report); every string escaped."""
    from .page import esc

    versions, table = rows(groups)
    if not table:
        return ""
    head = "".join(f"<th>{esc(h)}</th>" for h in ["report", "claim"] + [f"TF {v}" for v in versions]
                   + ["agrees with the claim?"])
    body = "".join(
        "<tr>" + f"<td><a href=\"{esc(row['report'].url)}\">{esc(row['report'].name)}</a></td>"
        f"<td>{esc(row['report'].claim)}</td>"
        + "".join(f"<td>{esc(_answer(row['answers'].get(v), row['defaults'].get(v)))}</td>" for v in versions)
        + f"<td>{esc(_agrees(row))}</td></tr>" for row in table)
    return (f"<h2>Public reports</h2><p class=\"read\">Each report's repro (kerasbench/examples/reports) under its "
            f"reporter's strategy, against the claim's releases.</p><table class=\"reports\"><tr>{head}</tr>{body}"
            "</table>")
