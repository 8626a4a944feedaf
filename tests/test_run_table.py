"""The run table as a terminal shows it: lines that fit, floor lines that name their rows, what the loop ran on."""

import copy
import json
import os
import pathlib

from kerasbench import runtable
from kerasbench.record import framework_text

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures" / "compare"


def _records():
    return json.loads((FIXTURES / "tf221.json").read_text())["records"]


def test_the_run_table_fits_a_hundred_columns_every_figure_kept():
    """Before: one line of 244 characters a row (every metric's column in one table)."""
    records = _records()
    text = runtable.run_table(records)
    tables = text.split("\nRSS per iteration:")[0].splitlines()
    assert max(len(line) for line in tables) <= runtable.RUN_WIDTH, max(tables, key=len)
    headers = [line for line in tables if line.startswith("loop ")]
    assert len(headers) >= 2 and all(h.split()[:2] == ["loop", "strategy"] for h in headers)
    names = [name for name, _ in runtable._columns(gpu=False)]
    for name in names:  # every column is in one of the tables, once
        assert sum(name in h for h in headers) >= 1, name
    rows = [line for line in tables if line.startswith(tuple(r["loop"] + " " for r in records))]
    assert len(rows) == len(headers) * len(records)


def test_floor_lines_name_their_rows_and_shorten_paths(monkeypatch):
    """Before: 'resolution 32 KiB/iteration, from calibration /venv/lib/python3.11/site-packages/...', no row."""
    records = copy.deepcopy(_records())[:3]
    home = os.path.expanduser("~")
    for i, r in enumerate(records):
        r["summary"]["floor_source"] = (f"calibration {home}/.cache/kerasbench/calibration/glibc.json" if i else
                                        "calibration /venv/lib/python3.11/site-packages/kerasbench/cal/glibc.json")
        r["summary"]["floor"] = 32 * 1024.0
    lines = runtable.run_table(records).splitlines()
    first = f"{records[0]['loop']} × {records[0]['strategy']}: "
    shipped = next(line for line in lines if line.startswith(first) and " KiB/iteration, from calibration " in line)
    assert shipped.endswith("from calibration …/site-packages/kerasbench/cal/glibc.json"), shipped
    rest = ", ".join(f"{r['loop']} × {r['strategy']}" for r in records[1:])
    mine = next(line for line in lines if line.startswith(rest + ": "))
    assert mine.endswith("from calibration ~/.cache/kerasbench/calibration/glibc.json"), mine


def test_a_loop_without_tf_says_so_not_none():
    """Before: `run --tf 2.15.1` of a control loop said 'TF None, Keras None'."""
    env = {"tensorflow": None, "keras": None, "python": "3.11.7"}
    assert framework_text(env) == "TF and Keras not imported (the loop ran without them)"
    assert framework_text({"tensorflow": "2.15.1", "keras": "2.15.0"}) == "TF 2.15.1, Keras 2.15.0"
