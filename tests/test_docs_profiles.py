"""The profiles are defined once in the docs (docs/protocol.md, "A time budget, not a count"), as the code defines
them (kerasbench/profiles.py's PROFILES); the README and docs/asv.md link there instead of saying it again."""

import pathlib
import re

from kerasbench.profiles import PROFILES

ROOT = pathlib.Path(__file__).resolve().parent.parent
ANCHOR = "protocol.md#a-time-budget-not-a-count"


def _table():
    """The table's rows, {profile: {column: cell}}."""
    section = (ROOT / "docs" / "protocol.md").read_text().split("## A time budget, not a count", 1)[1]
    lines = [line for line in section.split("\n## ", 1)[0].splitlines() if line.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = dict(zip(head, cells))
    return rows


def _count(text):
    return int(text.replace(",", ""))


def _range(text):
    """'8 – 2,000' as (8, 2000), '12' as (12, 12)."""
    low, _, high = text.partition("–")
    return _count(low), _count(high or low)


def test_the_table_is_the_code():
    rows = _table()
    assert list(rows) == list(PROFILES), "a profile of the code missing from the table, or one the code lacks"
    for name, p in PROFILES.items():
        row = rows[name]
        assert float(row["budget (s of loop)"]) == p.budget, name
        assert float(row["at least"].removesuffix(" s")) == p.min_seconds, name
        assert _range(row["iterations"]) == (p.min_iterations, p.max_iterations), name
        assert _range(row["`process_isolation`"]) == (p.isolated_min, p.isolated_max), name
        assert _count(row["warm-up"]) == p.warmup, name
        assert _count(row["repeats"]) == p.repeats, name
        assert row["looks"] == ("stop once decided" if p.sequential else "none: the whole budget"), name


def test_the_readme_and_asv_link_to_the_table_and_restate_no_figure():
    for path in (ROOT / "README.md", ROOT / "docs" / "asv.md"):
        text = path.read_text()
        assert ANCHOR in text, f"{path.name} does not link to the profiles' table"
        said = re.findall(r"`(?:quick|default|full|reference)` \(\d[^)]*\)", text)
        assert not said, f"{path.name} restates a profile's figures ({said}): link to docs/{ANCHOR} instead"
