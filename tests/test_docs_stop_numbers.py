"""Docs cite dates and commits, not the internal "stop N" or "session N" numbers of the rounds that wrote them."""

import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
INTERNAL = re.compile(r"\b(?:[Ss]tops?|[Ss]essions?)\s+\d+\b")


@pytest.mark.parametrize("page", sorted(DOCS.rglob("*.md")), ids=lambda p: str(p.relative_to(DOCS)))
def test_no_internal_round_numbers_in_docs(page):
    text = page.read_text(encoding="utf-8")
    found = [f"{page.name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}" for m in INTERNAL.finditer(text)]
    assert not found, "internal round numbers (write a date or a commit): " + "; ".join(found)


def test_the_check_reads_what_it_means():
    assert INTERNAL.search("made in stop 48 the way") and INTERNAL.search("(Stop\n57: 92 of 400")
    assert not INTERNAL.search("a ramp that stops as a leak") and not INTERNAL.search("the session's records")
