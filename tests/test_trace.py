"""run --trace: where memory grows (tracemalloc sites, object types, memray's native sites), stored, shown."""

import copy
import io
import json
import pathlib

import pytest

from kerasbench import compare, report, trace
from kerasbench.cli import main
from kerasbench.loading import load_records

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures" / "compare"
TF212, TF221 = str(FIXTURES / "tf212.json"), str(FIXTURES / "tf221.json")
KIB = 1024
LEAK = 64 * KIB  # a Python leak of known size per iteration


class Kept:
    """An object type of known count: one per iteration."""


def _leaky_loop(tracer, iterations, kept):
    for k in range(iterations):
        kept.append((bytearray(LEAK), Kept()))  # the leaking line
        tracer.after_iteration(k)


def test_a_known_python_leak_is_the_top_site_with_its_size(monkeypatch):
    monkeypatch.setattr(trace, "_memray", lambda: None)  # tracemalloc and gc only
    tracer, kept = trace.Tracer(top=5, iterations=6, native=True), []
    tracer.start()
    _leaky_loop(tracer, 6, kept)
    t = tracer.result()
    top = t["python_sites"][0]
    assert top["site"].endswith("test_trace.py:26"), top
    assert top["bytes_per_iter"] == pytest.approx(LEAK, rel=0.02) and t["iterations"] == 5
    assert t["python_bytes_per_iter"] == pytest.approx(LEAK, rel=0.1)
    kept_type = [x for x in t["types"] if x["type"].endswith("Kept")]
    assert kept_type and kept_type[0]["per_iter"] == pytest.approx(1.0)
    assert t["native_sites"] is None and "memray not installed" in t["native_note"]
    assert t["seconds_in_loop"] > 0 and (t["first"], t["last"]) == (0, 5)


def test_nothing_grows_nothing_is_named(monkeypatch):
    monkeypatch.setattr(trace, "_memray", lambda: None)
    tracer = trace.Tracer(top=5, iterations=6)
    tracer.start()
    for k in range(6):
        bytearray(LEAK)  # made and dropped
        tracer.after_iteration(k)
    t = tracer.result()
    assert all(s["bytes_per_iter"] < LEAK / 8 for s in t["python_sites"]), t["python_sites"]
    assert not [x for x in t["types"] if x["type"].endswith("Kept")]


def test_native_sites_with_memray():
    pytest.importorskip("memray")
    tracer, kept = trace.Tracer(top=5, iterations=6, native=True), []
    tracer.start()
    _leaky_loop(tracer, 6, kept)
    t = tracer.result()
    assert t["native_sites"], t["native_note"]
    top = t["native_sites"][0]
    assert "test_trace.py:26" in top["site"] and top["bytes_per_iter"] == pytest.approx(LEAK, rel=0.05)
    assert not any("_tracemalloc.c" in s["site"] for s in t["native_sites"])  # the trace's own bookkeeping is left out


def test_no_trace_where_there_is_nothing_to_trace():
    assert "child processes" in trace.Tracer(5, 6, in_process=False).result()["skipped"]
    one = trace.Tracer(5, 1)
    one.start()
    assert "2 or more" in one.result()["skipped"]


# ---------------------------------------------------------------- through a worker, the record, the outputs


def test_run_trace_stores_prints_and_marks_the_record(tmp_path):
    out, path = io.StringIO(), tmp_path / "traced.json"
    code = main(["run", "--loop", "control", "--strategy", "control_leak_python", "--iterations", "5",
                 "--trace", "3", "--json", str(path)], out=out)
    assert code == 0
    [record] = json.loads(path.read_text())["records"]  # conftest validates it against the schema
    assert record["spec"]["trace"] == 3 and trace.traced(record)
    t = trace.record_trace(record)
    assert len(t["python_sites"]) <= 3 and t["python_sites"][0]["site"].endswith("loops.py:247")
    assert t["python_sites"][0]["bytes_per_iter"] == pytest.approx(256 * KIB, rel=0.05)  # the control's default leak
    text = out.getvalue()
    assert "trace of control × control_leak_python" in text and "loops.py:247" in text
    assert "object types that grow" in text and "native sites: n/a (not asked for" in text


def test_untraced_runs_carry_no_trace(tmp_path):
    path = tmp_path / "plain.json"
    assert main(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "3", "--json",
                 str(path)], out=io.StringIO()) == 0
    [record] = json.loads(path.read_text())["records"]
    assert not trace.traced(record) and trace.record_trace(record) is None


def test_trace_is_for_one_pair(capsys):
    code = main(["run", "--loop", "control", "--strategy", "control_noop,control_leak_python", "--trace"],
                out=io.StringIO())
    err = capsys.readouterr().err
    assert code == 2 and "--trace traces one pair" in err and len(err.strip().splitlines()) == 1


def _traced(data, top=10):
    """The fixture's records as if traced: spec.trace and a small trace in the first repeat."""
    data = copy.deepcopy(data)
    for r in data["records"]:
        r["spec"]["trace"] = top
        r["repeats"][0]["result"]["trace"] = {
            "top": top, "iterations": 3, "first": 0, "last": 3, "python_bytes_per_iter": 2048.0,
            "python_sites": [{"site": "keras/src/<script>x.py:12", "bytes_per_iter": 2048.0, "count_per_iter": 4.0,
                              "stack": ["keras/src/<script>x.py:12", "kerasbench/loops.py:99"]}],
            "types": [{"type": "builtins.dict", "per_iter": 7.0}], "native_sites": None,
            "native_note": "memray not installed", "seconds_in_loop": 0.5, "seconds_after": 0.1}
    return data


def test_compare_and_report_refuse_traced_with_untraced(tmp_path, capsys):
    traced = tmp_path / "traced.json"
    traced.write_text(json.dumps(_traced(json.loads(pathlib.Path(TF221).read_text()))))
    for argv in (["compare", TF212, str(traced)], ["report", TF212, str(traced), "--output", str(tmp_path / "r.html")]):
        code = main(argv, out=io.StringIO())
        err = capsys.readouterr().err
        assert code == 2 and "Traced and untraced records" in err and str(traced) in err
    assert not (tmp_path / "r.html").exists()


def test_traced_with_traced_compares_and_the_report_shows_the_trace(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_traced(json.loads(pathlib.Path(TF212).read_text()))))
    b.write_text(json.dumps(_traced(json.loads(pathlib.Path(TF221).read_text()))))
    assert compare.compare(compare.group(load_records([str(a), str(b)])))
    page = report.build([str(a), str(b)])
    assert page.count('<div class="trace"') == 6 and "Where it grows: sweep × clear_session_del_gc, TF 2.21.0" in page
    assert "keras/src/&lt;script&gt;x.py:12" in page and "<script>x.py" not in page  # escaped
    assert "+2.0" in page and "builtins.dict" in page
