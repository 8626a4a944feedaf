"""The README's finding quotes the atlas (docs/atlas/atlas.json) cell by cell: each row of its table is what the
atlas holds for that release and the pair its triage command names, so the two cannot disagree."""

import pathlib
import re

import pytest

from kerasbench import atlas

ROOT = pathlib.Path(__file__).resolve().parent.parent
KIB = 1024


def _section():
    return (ROOT / "README.md").read_text().split("## A finding", 1)[1].split("\n## ", 1)[0]


def _rows(section):
    """The table's rows as {column: cell}, bold marks dropped."""
    lines = [line for line in section.splitlines() if line.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(head, (c.strip().replace("**", "") for c in line.strip("|").split("|")))) for line in lines[2:]]


@pytest.fixture(scope="module")
def groups():
    return atlas.load([str(ROOT / "docs" / "atlas" / "atlas.json")])


def test_every_row_is_the_atlas_cell(groups):
    section = _section()
    loop, strategy = re.search(r"--loop (\w+)\s+--strategy (\w+)", section).groups()
    rows = _rows(section)
    assert len(rows) >= 2, "the finding's table has fewer than two releases"
    for row in rows:
        tf = row["TF"]
        assert tf in groups, f"README: TF {tf} is not a column of the atlas"
        record, _ = groups[tf][(loop, strategy)]
        summary = record["summary"]
        where = f"README's row TF {tf} ({loop} × {strategy})"
        assert row["Keras"] == record["environment"]["keras"], where
        slope, low, high = (float(x) for x in re.fullmatch(r"([+-][\d.]+) \[([+-][\d.]+), ([+-][\d.]+)\]",
                                                              row["KiB/iter [95% CI]"]).groups())
        for said, key in ((slope, "growth_per_iter"), (low, "growth_ci_low"), (high, "growth_ci_high")):
            atlas_kib = summary[key] / KIB
            assert abs(said - atlas_kib) <= 0.5, f"{where}: {key} {said:+g} KiB, the atlas {atlas_kib:+.1f}"
        assert row["verdict"] == atlas.verdict(summary), f"{where}: the atlas says {atlas.verdicts_text(summary)}"
        assert row["what grew"] == summary.get("growth_kind"), f"{where}: the atlas says {summary.get('growth_kind')}"
