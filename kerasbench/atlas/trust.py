"""How far to trust the atlas' cells: each column whose release a reference (long runs of the same pairs) measured,
scored as shown against it (kerasbench.score), said under the map."""

from __future__ import annotations

import os
from typing import List, Sequence

from ..compare.cells import Groups
from ..errors import UsageError
from ..page import esc


TRUST_HEAD = ("<b>How far to trust a cell</b>: a column's cells scored as shown (their labels at their floors) "
              "against long runs of the same pairs (<code>kerasbench score atlas.json --reference FILE</code> lists "
              "every pair):")


def trust_html(lines: Sequence[str]) -> str:
    """trust_lines under the map: a list headed by how the cells were scored ("" for none)."""
    if not lines:
        return ""
    return f'<div class="trust"><p>{TRUST_HEAD}</p><ul>{"".join(f"<li>{esc(x)}</li>" for x in lines)}</ul></div>'


def trust_lines(groups: Groups, references: Sequence[str]) -> List[str]:
    """A sentence per reference file (score.brief): the atlas column of its release scored as shown against it. A
    folder stands for its .json files of the releases the atlas shows (the workflow's: a run measures the releases it
    was asked for). A UsageError naming a file that cannot be read, a file whose release no column is, or a folder
    with no .json file."""
    import glob

    from .. import score

    cells = [(cell, path, v) for v, by_pair in groups.items() for cell, path in by_pair.values()]
    lines = []
    for path in references:
        if not os.path.isdir(path):
            lines.append(score.brief(*score.against(cells, path), path))
            continue
        files = sorted(glob.glob(os.path.join(path, "*.json")))
        if not files:
            raise UsageError(f"{path} is a folder with no .json file: give long runs of a release (a file, or a "
                             "folder of them: docs/reference/protocol8).")
        found = [(f, score.against(cells, f, absent_ok=True)) for f in files]
        lines += [score.brief(*scored, f) for f, scored in found if scored is not None]
    return lines
