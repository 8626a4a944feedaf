"""The atlas' own data (atlas.json): what the page reads of each record and nothing more, its format,
versions and checks, and loading it (with records beside it) into compare's groups.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import __version__, compare, rule
from ..errors import UsageError
from ..machine import FINGERPRINT_KEYS
from ..releases import version_key
from ..page import finite, no_paths
from ..units import MIB
from .model import TRACES, main_axis, mark, previous_all


# ---------------------------------------------------------------- the atlas' own data (docs/atlas/atlas.json)
#
# What the page reads of each record and nothing more: its status and reason, the summary fields the cells and
# their details show, the hardware fingerprint and the packages of its environment, and for the two sides of a
# change the RSS series of their first repeat (decimated) that the change's picture draws. ~0.6 KiB a cell where
# the records are ~35 KiB (a column's environments and floors stamps kept once, cells naming theirs by index):
# the whole matrix's atlas is published with the project; the page made again from it is the page made from the
# records.

DATA_SCHEMA = "kerasbench-atlas"
DATA_VERSION = 2  # 2: a column's floors stamps once each, a cell's summary names its own by index (1 still reads)
READS = (1, 2)
# What a cell shows, and what a reader needs to see how it was judged: each series' slope and interval, the
# iterations each repeat measured (the floors' counts), the level of the test and where each repeat stopped.
SUMMARY_KEYS = ("verdict", "growth_kind", "growth_per_iter", "growth_ci_low", "growth_ci_high", "peak_loop",
                "peak_over_baseline", "heap_growth_per_iter", "heap_growth_ci_low", "heap_growth_ci_high",
                "heap_verdict", "repeats", "measured", "stopped", "alpha", "floor", "heap_floor", "why",
                "protocol", "floors_from") + TRACES
UNROUNDED = ("alpha",)  # not bytes: kept as it is
ENVIRONMENT_KEYS = ("machine_name", "tensorflow", "keras", "keras_package", "python", "numpy", "device",
                    "tf_distribution", "tf_git_version", "nightly") + FINGERPRINT_KEYS
SPARK_POINTS = 80  # a change's picture: at most this many readings per side


def _slim(value: Any) -> Any:
    """A summary figure as the page needs it: bytes to a tenth of a byte (the page shows tenths of a KiB); a text
    (a why, a floor's stamp) without a machine's folders (page.no_paths: the data is published)."""
    if isinstance(value, float):
        tenths = round(value, 1)
        return int(tenths) if tenths.is_integer() else tenths  # 4.96 -> 5, as 5.0 is: one spelling of a number
    if isinstance(value, str):
        return no_paths(value)
    if isinstance(value, dict):
        return {k: _slim(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_slim(v) for v in value]
    return value


def _slim_summary(summary) -> dict:
    """The SUMMARY_KEYS a summary has; an empty, NaN or infinite one is left out (the page shows n/a for it, as for
    a NaN: JSON has no NaN)."""
    s = summary or {}
    return {k: s[k] if k in UNROUNDED else _slim(s[k]) for k in SUMMARY_KEYS
            if s.get(k) not in (None, "") and not (isinstance(s[k], float) and not math.isfinite(s[k]))}


def _environment(record) -> dict:
    env = record.get("environment") or {}
    out = {k: env[k] for k in ENVIRONMENT_KEYS if env.get(k) is not None}
    if "machine_name" not in out and env.get("hostname"):
        out["machine_name"] = env["hostname"]
    return out


def rss_mib(record) -> Optional[Tuple[int, List[float]]]:
    """(every, readings): the first repeat's RSS after every `every`-th iteration (at most SPARK_POINTS of them),
    MiB over its first reading; None without a series of two readings. An atlas file's cell carries its own."""
    if record.get("rss_mib"):
        return int(record.get("rss_every") or 1), record["rss_mib"]
    for rep in record.get("repeats") or []:
        rss = ((rep.get("result") or {}).get("series") or {}).get("rss")
        if rss is not None and len(rss) >= 2 and all(finite(v) for v in rss):
            values = [float(v) for v in rss]
            every = max(1, math.ceil((len(values) - 1) / (SPARK_POINTS - 1)))
            return every, [round((v - values[0]) / MIB, 2) for v in values[::every]]
    return None


def data(groups: compare.Groups) -> dict:
    """The atlas data of grouped records: {schema, version, kerasbench, columns: [{version, cells: [...]}]}."""
    groups = main_axis(groups)
    versions = sorted(groups, key=version_key)
    changed, prev = set(), previous_all(versions)
    for v in versions:
        p = prev[v]
        for pair, (record, _) in groups[v].items():
            if p and mark(groups[p].get(pair, (None, None))[0], record):
                changed.update({(v, pair), (p, pair)})
    columns = []
    for v in versions:
        # a column's environments and floors stamps once each (a calibration's stamp is ~0.5 KiB, the same in most
        # of a column's cells: a quarter of the data when each cell kept its own); a cell names its own by index
        cells, environments, floors = [], [], []
        for (loop, strategy), (record, _) in sorted(groups[v].items(), key=lambda kv: compare.pair_order(kv[0])):
            env = _environment(record)
            if env not in environments:
                environments.append(env)
            summary = _slim_summary(record.get("summary"))
            stamp = summary.pop("floors_from", None)
            cell = {"loop": loop, "strategy": strategy, "status": record.get("status"), "summary": summary,
                    "env": environments.index(env)}
            if stamp is not None:
                if stamp not in floors:
                    floors.append(stamp)
                cell["floors"] = floors.index(stamp)
            if record.get("reason"):
                cell["reason"] = no_paths(record["reason"])  # published with the project: no machine's folders
            if (v, (loop, strategy)) in changed and (rss := rss_mib(record)):
                cell["rss_every"], cell["rss_mib"] = rss
            cells.append(cell)
        columns.append({"version": v, "environments": environments, "floors": floors, "cells": cells})
    judged = sorted({rule.version_of(c["summary"]) for col in columns for c in col["cells"]},
                    key=lambda v: -1 if v is None else v)
    return {"schema": DATA_SCHEMA, "version": DATA_VERSION, "kerasbench": __version__,
            "protocol": judged[0] if len(judged) == 1 else judged, "columns": columns}


def is_data(payload: Any) -> bool:
    return isinstance(payload, dict) and payload.get("schema") == DATA_SCHEMA


def groups_of(payload: Any, path: str) -> compare.Groups:
    """The groups (compare.group's shape) of an atlas data file; a one-line UsageError naming the file and what is
    wrong with it."""
    def bad(why):
        return UsageError(f"Not a usable kerasbench atlas file: {path}: {why}.")

    if payload.get("version") not in READS:
        raise bad(f"version {payload.get('version')!r}, this kerasbench reads version "
                  f"{' and '.join(map(str, READS))}")
    columns = payload.get("columns")
    if not isinstance(columns, list):
        raise bad("no 'columns' list")
    groups: compare.Groups = {}
    for i, column in enumerate(columns):
        if not (isinstance(column, dict) and isinstance(column.get("version"), str)
                and isinstance(column.get("cells"), list) and isinstance(column.get("environments"), list)
                and all(isinstance(e, dict) for e in column["environments"])):
            raise bad(f"columns[{i}] is not an object with a 'version' string, an 'environments' list of objects "
                      "and a 'cells' list")
        if column["version"] in groups:
            raise bad(f"columns[{i}]: TF {column['version']} twice")
        stamps = column.get("floors", [])
        if not (isinstance(stamps, list) and all(isinstance(s, dict) for s in stamps)):
            raise bad(f"columns[{i}].floors is not a list of objects (the floors stamps its cells name)")
        for k, environment in enumerate(column["environments"]):
            problem = environment_problem(environment, f"columns[{i}].environments[{k}]")
            if problem:
                raise bad(problem)
        cells = groups.setdefault(column["version"], {})
        for j, given in enumerate(column["cells"]):
            where = f"columns[{i}].cells[{j}]"
            if not (isinstance(given, dict) and isinstance(given.get("loop"), str)
                    and isinstance(given.get("strategy"), str)):
                raise bad(f"{where} has no 'loop' and 'strategy' strings")
            if not isinstance(given.get("summary", {}), dict):
                raise bad(f"{where}.summary is not an object")
            env = given.get("env")
            if not (isinstance(env, int) and not isinstance(env, bool) and 0 <= env < len(column["environments"])):
                raise bad(f"{where}.env is not the index of one of the column's {len(column['environments'])} "
                          "environments")
            if "floors" in given:  # version 2: the summary's floors_from, kept once in the column
                k = given["floors"]
                if not (isinstance(k, int) and not isinstance(k, bool) and 0 <= k < len(stamps)):
                    raise bad(f"{where}.floors is not the index of one of the column's {len(stamps)} floors stamps")
                given = dict(given, summary=dict(given.get("summary", {}), floors_from=stamps[k]))
                given.pop("floors")
            problem = cell_problem(given, where)
            if problem:
                raise bad(problem)
            cell = dict(given, environment=column["environments"][env])
            rss = cell.get("rss_mib")
            if rss is not None and not (isinstance(rss, list) and all(finite(v) for v in rss)):
                raise bad(f"{where}.rss_mib is not a list of numbers")
            every = cell.get("rss_every", 1)
            if not (isinstance(every, int) and not isinstance(every, bool) and every >= 1):
                raise bad(f"{where}.rss_every is not a whole number of at least 1")
            if (cell["loop"], cell["strategy"]) in cells:  # data() writes each pair once
                raise bad(f"{where}: {cell['loop']} × {cell['strategy']} twice for TF {column['version']}")
            cells[(cell["loop"], cell["strategy"])] = (cell, path)
    return groups


def cell_problem(cell: dict, where: str) -> Optional[str]:
    """What is wrong with the types of what the page reads of an atlas file's cell (its status, reason and summary),
    in words ('columns[0].cells[1].summary.floor is a string, expected number'); None when every value has its type.
    The record's JSON Schema is the one rule (record.type_problem, the records' check); a cell whose values are all
    of the plain types the schema names passes without it (_plain: an atlas of 3000 columns is 60,000 cells)."""
    from ..record import type_problem

    summary = cell.get("summary", {})
    if _plain(cell.get("status"), ("string",)) and _plain(cell.get("reason"), ("string", "null")) and \
            all(_plain(v, _KINDS["summary"].get(k, ())) for k, v in summary.items()):
        return None
    return type_problem({k: cell[k] for k in ("status", "reason", "summary") if k in cell}, where)


def environment_problem(environment: dict, where: str) -> Optional[str]:
    """cell_problem's check of a column's environment (where: 'columns[0].environments[0]'); None when fine."""
    from ..record import type_problem

    if all(_plain(v, _KINDS["environment"].get(k, ())) for k, v in environment.items()):
        return None
    problem = type_problem({"environment": environment}, "")
    return where + problem[len(".environment"):] if problem else None


def _plain(value: Any, kinds: Sequence[str]) -> bool:
    """Whether `value` is plainly of one of `kinds` (JSON types; 'enum:<values>' for a text of those; 'stamps' for an
    open object of objects of scalars, or nulls): True only for what it can tell; anything else goes to the schema's
    check."""
    for kind in kinds:
        if kind.startswith("enum:"):
            if isinstance(value, str) and value in kind[5:].split("|"):
                return True
        elif kind == "stamps" and isinstance(value, dict) and all(
                v is None or isinstance(v, dict) and all(isinstance(x, SCALARS) for x in v.values())
                for v in value.values()):
            return True
        elif kind == "null" and value is None or kind == "string" and isinstance(value, str) \
                or kind == "integer" and type(value) is int or kind == "number" and type(value) in (int, float):
            return True
    return False


def _kinds_of(schema: dict) -> Tuple[str, ...]:
    """The plain kinds a property's schema allows (type, a list of types, an enum, anyOf of those); () for others."""
    if "anyOf" in schema:
        return tuple(k for part in schema["anyOf"] for k in _kinds_of(part))
    if "enum" in schema and all(isinstance(v, str) for v in schema["enum"]):
        return ("enum:" + "|".join(schema["enum"]),)
    kinds = schema.get("type")
    if kinds == "object" and "properties" not in schema:  # floors_from: {series: its stamp (an object) or null}
        return ("stamps",)
    kinds = [kinds] if isinstance(kinds, str) else kinds or []
    return tuple(k for k in kinds if k in ("null", "string", "integer", "number"))


class _Kinds(dict):
    """{'summary' / 'environment': {key: plain kinds}} from the record's JSON Schema, read on first use."""

    def __missing__(self, part):
        from ..record import json_schema

        defs = json_schema()["$defs"]
        props = defs["Summary" if part == "summary" else "Environment"]
        props = props.get("properties") or {k: v for p in props.get("allOf", []) for k, v in
                                            (p.get("properties") or {}).items()}
        self[part] = {k: _kinds_of(v) for k, v in props.items()}
        return self[part]


_KINDS = _Kinds()
SCALARS = (str, int, float, type(None))


def load(paths: Sequence[str], rejudge: bool = False) -> compare.Groups:
    """Grouped records of `paths` (compare's inputs and checks; `rejudge`: compare.group's), or the groups of one
    atlas data file (one protocol, or refused: its cells keep no series to judge again), with the cells of any
    records beside it put into its columns (merge)."""
    return merge(paths, rejudge)[0]


def merge(paths: Sequence[str], rejudge: bool = False) -> Tuple[compare.Groups, Dict[str, int]]:
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
        return compare.group(compare.load(paths), rejudge), counts
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
        added = group_columns(compare.load(records))
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
        return compare.group(loaded, rejudge=True)
    columns: dict = {}
    for item in loaded:
        columns.setdefault(item[2], []).append(item)
    by_rule: dict = {}
    for items in columns.values():
        by_rule.setdefault(rule.one_version((record, path) for record, path, _ in items), []).extend(items)
    groups: dict = {}
    for items in by_rule.values():
        groups.update(compare.group(items))
    kinds = {traced(record): path for column in groups.values() for record, path in column.values()}
    if len(kinds) > 1:
        raise UsageError(f"Traced and untraced records: {kinds[True]} was measured with `run --trace`, {kinds[False]} "
                         "without; a trace moves the memory figures: an atlas of traced or of untraced records.")
    compare._one_body(groups)
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


def data_text(payload: dict) -> str:
    """The atlas data as JSON with a cell a line (a new run's diff reads cell by cell)."""
    columns = []
    for column in payload["columns"]:
        cells = ",\n".join(json.dumps(cell, separators=(",", ":"), allow_nan=False) for cell in column["cells"])
        columns.append(f'{{"version":{json.dumps(column["version"])},'
                       f'"environments":{json.dumps(column["environments"], separators=(",", ":"))},'
                       f'"floors":{json.dumps(column.get("floors", []), separators=(",", ":"))},'
                       f'"cells":[\n{cells}]}}')
    head = {k: v for k, v in payload.items() if k != "columns"}
    return json.dumps(head, separators=(",", ":"))[:-1] + ',"columns":[\n' + ",\n".join(columns) + "]}\n"


PAGE, DATA = "index.html", "atlas.json"
