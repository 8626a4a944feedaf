"""What an atlas is made from, as compare's groups: records, or one atlas data file (data.py) with the cells of
records beside it put into its columns; a column judged by one protocol, as compare asks.
"""

from __future__ import annotations

import os
from typing import Dict, Optional, Sequence, Tuple

from .. import rule
from ..compare.cells import Groups
from ..compare.groups import _one_body, group, load as load_compared
from ..errors import UsageError
from .data import groups_of, is_data


def load(paths: Sequence[str], rejudge: bool = False) -> Groups:
    """Grouped records of `paths` (compare's inputs and checks; `rejudge`: compare.group's), or the groups of one
    atlas data file (one protocol, or refused: its cells keep no series to judge again), with the cells of any
    records beside it put into its columns (merge)."""
    return merge(paths, rejudge)[0]


def merge(paths: Sequence[str], rejudge: bool = False) -> Tuple[Groups, Dict[str, int]]:
    """(the groups of `paths`, what the records added): `paths` are records, or one atlas data file and records to
    add to it. Each record's cell goes into its column, a new column where the atlas has none, and replaces the
    atlas' cell of the same pair there (the atlas keeps the cells of the records that made it, not the records:
    cells are added to it, it is not made again). The checks are the atlas' as if every cell were a record: a
    column judged by one protocol, traced with untraced and two bodies for one pair refused. The counts: {"added",
    "replaced", "columns"} (all 0 without an atlas file)."""
    counts = {"added": 0, "replaced": 0, "columns": 0}
    found = {p: _data_in(p) for p in paths if p.endswith(".json")}  # each file read once here
    atlases = [p for p in paths if found.get(p) is not None]
    if not atlases:
        return group(load_compared(paths), rejudge), counts
    if len(atlases) > 1:
        raise UsageError(f"Two atlas files (kerasbench-atlas): {atlases[0]} and {atlases[1]}; give one, and the "
                         "records whose cells go into it.")
    base = atlases[0]
    groups = groups_of(found[base], base)
    records = [p for p in paths if p != base]
    if records:
        if rejudge:
            raise UsageError(f"--rejudge judges records again from their series; {base}'s cells keep none: add "
                             "records of this protocol to it, or make the atlas again from all the records.")
        added = group_columns(load_compared(records))
        counts["columns"] = len(added)
        for version, cells in added.items():
            column = groups.setdefault(version, {})
            had, new = _protocols(column.values()), _protocols(cells.values())
            if had and new and had != new:  # each side one protocol (groups_of's and group_columns' checks)
                path = next(iter(cells.values()))[1]
                raise UsageError(f"{path} was judged by {rule.version_text(new.pop())}, the column TF {version} of "
                                 f"{base} by {rule.version_text(had.pop())}: a column is judged by one protocol; "
                                 "measure it again with this kerasbench, or make the atlas again from all its records "
                                 "with --rejudge.")
            for pair, cell in cells.items():
                counts["replaced" if pair in column else "added"] += 1
                column[pair] = cell
    group_columns([(cell, path, v) for v, cells in groups.items() for cell, path in cells.values()], rejudge)
    return groups, counts


def _protocols(cells) -> set:
    """The protocols (rule.version_of) that judged the measured ones of (record or cell, path) `cells`."""
    return {rule.version_of(cell.get("summary")) for cell, _ in cells if cell.get("status", "ok") == "ok"}


def group_columns(loaded, rejudge: bool = False):
    """compare.group of `loaded`, a column's protocol at a time: each column (version) is one rule's, as compare
    asks, but two columns may be two rules' (a nightly measured before a protocol change keeps its verdicts and its
    stamps: the page says which columns each judged). `rejudge`: every record judged again by this protocol first,
    one rule for all (compare.group's). Traced with untraced and two bodies for one pair are refused across columns
    too."""
    from ..trace.records import traced

    if rejudge:
        return group(loaded, rejudge=True)
    columns: dict = {}
    for item in loaded:
        columns.setdefault(item[2], []).append(item)
    by_rule: dict = {}
    for items in columns.values():
        by_rule.setdefault(rule.one_version((record, path) for record, path, _ in items), []).extend(items)
    groups: dict = {}
    for items in by_rule.values():
        groups.update(group(items))
    kinds = {traced(record): path for column in groups.values() for record, path in column.values()}
    if len(kinds) > 1:
        raise UsageError(f"Traced and untraced records: {kinds[True]} was measured with `run --trace`, {kinds[False]} "
                         "without; a trace moves the memory figures: an atlas of traced or of untraced records.")
    _one_body(groups)
    return groups


def holds_data(path: str) -> bool:
    return _data_in(path) is not None


def _data_in(path: str) -> Optional[dict]:
    """The atlas data file at `path` (kerasbench-atlas), read; None when `path` is not one (records, a folder)."""
    from ..files import DATA_LIMIT, read_json

    try:
        data = read_json(path, "atlas file", limit=DATA_LIMIT) if os.path.isfile(path) else None
    except UsageError:
        return None
    return data if data is not None and is_data(data) else None
