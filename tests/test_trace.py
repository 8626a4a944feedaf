"""run --trace: where memory grows (tracemalloc sites, object types, memray's native sites), stored, shown."""

import copy
import io
import json
import pathlib
import subprocess
import sys
import time
from collections import Counter

import pytest

from kerasbench import compare, report, repro, trace
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


LEAK_LINE = next(n for n, line in enumerate(open(__file__), 1) if line.rstrip().endswith("# the leaking line"))


def traced_leak(memray: bool = False) -> dict:
    """The trace of _leaky_loop, native sites asked for (memray's, or with memray hidden its note)."""
    if not memray:
        trace.tracer._memray = lambda: None  # tracemalloc and gc only
    tracer, kept = trace.Tracer(top=5, iterations=6, native=True), []
    tracer.start()
    _leaky_loop(tracer, 6, kept)
    return tracer.result()


def traced_nothing() -> dict:
    trace.tracer._memray = lambda: None
    tracer = trace.Tracer(top=5, iterations=6)
    tracer.start()
    for k in range(6):
        bytearray(LEAK)  # made and dropped
        tracer.after_iteration(k)
    return tracer.result()


# A worker drives the loop from kerasbench's frames, which are not the user's code; driven from this file, the Tracer's
# own allocations (~2-3 KiB an iteration) were put on this file's `tracer.after_iteration(k)` line as the user's.
DRIVER = """
def drive(code, tracer):
    for k in range(6):
        code.iteration(None)
        tracer.after_iteration(k)
"""


def traced_repro(path: str) -> dict:
    """The trace of six iterations of the repro file `path` (tracemalloc and gc only), driven as a worker drives it."""
    trace.tracer._memray = lambda: None
    code, tracer, driver = repro.ReproFile(path), trace.Tracer(top=5, iterations=6), {}
    exec(compile(DRIVER, "<driver>", "exec"), driver)
    tracer.start()
    driver["drive"](code, tracer)
    return tracer.result()


def in_fresh_process(name: str, *args) -> dict:
    """The trace this module's function `name` returns, run in a fresh Python process: a Tracer counts every
    allocation and every GC-tracked object of its process, and in a pytest worker (-n 2) other tests' objects and
    threads grew beside the loop and moved the figures (these tests failed there, and passed alone)."""
    here = pathlib.Path(__file__).resolve().parent
    code = (f"import json, sys; sys.path.insert(0, {str(here)!r}); import test_trace; "
            f"print(json.dumps(test_trace.{name}(*{args!r})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_a_known_python_leak_is_the_top_site_with_its_size():
    t = in_fresh_process("traced_leak")
    top = t["python_sites"][0]
    assert top["site"].endswith(f"test_trace.py:{LEAK_LINE}"), top
    assert top["bytes_per_iter"] == pytest.approx(LEAK, rel=0.02) and t["iterations"] == 5
    assert t["python_bytes_per_iter"] == pytest.approx(LEAK, rel=0.1)
    kept_type = [x for x in t["types"] if x["type"].endswith("Kept")]
    assert kept_type and kept_type[0]["per_iter"] == pytest.approx(1.0)
    assert t["native_sites"] is None and "memray not installed" in t["native_note"]
    assert t["seconds_in_loop"] > 0 and (t["first"], t["last"]) == (0, 5)


def test_nothing_grows_nothing_is_named():
    t = in_fresh_process("traced_nothing")
    assert all(s["bytes_per_iter"] < LEAK / 8 for s in t["python_sites"]), t["python_sites"]
    assert not [x for x in t["types"] if x["type"].endswith("Kept")]


def test_native_sites_with_memray():
    pytest.importorskip("memray")
    t = in_fresh_process("traced_leak", True)
    assert t["native_sites"], t["native_note"]
    top = t["native_sites"][0]
    assert f"test_trace.py:{LEAK_LINE}" in top["site"] and top["bytes_per_iter"] == pytest.approx(LEAK, rel=0.05)
    assert not any("_tracemalloc.c" in s["site"] for s in t["native_sites"])  # the trace's own bookkeeping is left out
    # memray's capture is kept, and the printed trace names the command that draws it (before: deleted)
    assert pathlib.Path(t["native_file"]).is_file()
    text = trace.text([{"loop": "control", "strategy": "x", "repeats": [{"result": {"trace": t}}]}])
    assert f"memray flamegraph {t['native_file']}" in text
    pathlib.Path(t["native_file"]).unlink()


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
            "user_sites": [{"site": "/home/me/repro.py:7", "bytes_per_iter": 1024.0, "count_per_iter": 2.0,
                            "stack": ["/home/me/repro.py:7", "keras/src/<script>x.py:12"]}],
            "holders": [{"type": "repro.Kept", "per_iter": 1.0, "alive": 4, "sampled": 3, "agree": 3,
                         "held_by": ["list (len 4)", "module global `kept` in repro.py"], "rooted": True}],
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
    assert "/home/me/repro.py:7" in page and "held by list (len 4) ← module global `kept` in repro.py" in page


# ---------------------------------------------------------------- the user's lines first, and what holds what grows

MY_REPRO = '''"""A user's loop: one Blob per iteration, kept in a module-level list; the copying is the stdlib's."""
import copy

TEMPLATE = {"rows": [[0.0] * 64 for _ in range(64)]}


class Blob:
    def __init__(self, rows):
        self.rows = rows


blobs = []


def iteration(ctx, model):
    blobs.append(Blob(copy.deepcopy(TEMPLATE)))  # the user's line
'''
MY_LINE = next(n for n, line in enumerate(MY_REPRO.splitlines(), 1) if "the user's line" in line)


def _my_repro(tmp_path):
    path = tmp_path / "my_repro.py"
    path.write_text(MY_REPRO)
    return str(path)


def test_the_users_line_comes_first_and_the_list_and_global_that_hold_its_objects_are_named(tmp_path):
    path = _my_repro(tmp_path)
    t = in_fresh_process("traced_repro", path)
    assert t["frames"] == trace.FRAMES
    assert "copy.py" in t["python_sites"][0]["site"]  # innermost, the growth is the stdlib's ...
    mine = t["user_sites"][0]  # ... and it all goes through the user's line
    assert mine["site"] == f"{path}:{MY_LINE}" and mine["bytes_per_iter"] == pytest.approx(t["python_bytes_per_iter"],
                                                                                           rel=0.1)
    assert mine["stack"][0] == mine["site"] and "copy.py" in mine["stack"][-1]
    blob = t["holders"][0]
    assert blob["type"] == "kerasbench_repro.Blob" and blob["held_by"] == ["list (len 6)",
                                                                          "module global `blobs` in my_repro.py"]
    assert blob["rooted"] and blob["agree"] == blob["sampled"] == trace.HOLDER_SAMPLES and blob["alive"] == 6
    text = trace.text([{"loop": "repro", "strategy": "reuse_model", "repeats": [{"result": {"trace": t}}]}])
    lines = text.splitlines()
    first = lines.index(next(line for line in lines if line.startswith("  your code")))
    assert lines[first + 1].endswith(f"my_repro.py:{MY_LINE}") and first < lines.index(
        "  Python allocation sites that grow (per iteration; kerasbench's own left out):")
    assert lines[first + 2].strip() == ("blobs.append(Blob(copy.deepcopy(TEMPLATE)))  # the user's line   ← names "
                                        "`blobs`, which holds them")  # its source, and what it names
    assert "    Blob ×6 (+1.0/iteration) held by list (len 6) ← module global `blobs` in my_repro.py\n" in text


# ---------------------------------------------------------------- containers of what the gc does not track

ARRAYS_REPRO = '''"""A user's loop keeping 200 KiB of numpy arrays an iteration in a module list, 16 KiB in a dict."""
import numpy as np


class Cache:
    def __init__(self):
        self.items = {}


CACHE = Cache()
kept = []


def iteration(ctx, model):
    kept.append(np.ones(200 * 1024 // 8))  # the list's line
    CACHE.items[len(CACHE.items)] = np.ones(16 * 1024 // 8)  # the dict's line
'''


def test_a_list_of_arrays_is_named_first_and_no_kerasbench_frame_is_listed(tmp_path):
    """Before: the arrays' line was found, but "what holds the objects that grow: no type grew" (arrays are not
    GC-tracked), and kerasbench's probes filled the allocation sites."""
    path = tmp_path / "arrays_repro.py"
    path.write_text(ARRAYS_REPRO)
    t = in_fresh_process("traced_repro", str(path))
    lists = [c for c in t["containers"] if c["held_by"] == ["module global `kept` in arrays_repro.py"]]
    dicts = [c for c in t["containers"]
             if c["held_by"] == ["module global `CACHE` in arrays_repro.py, attribute `items`"]]
    assert lists and dicts, t["containers"]
    for c, kind, size in ((lists[0], "list", 200 * 1024), (dicts[0], "dict", 16 * 1024)):
        assert c["kind"] == kind and c["items"] == ["numpy.ndarray"] and c["rooted"], c
        assert c["per_iter"] == pytest.approx(1.0) and c["len"] == 6, c  # 6 iterations, one item each
        assert c["bytes_per_iter"] == pytest.approx(size, rel=0.05), c
    assert t["containers"][0] is not dicts[0]  # the most bytes first
    assert not any(trace.harness_file(s["site"]) for s in t["python_sites"]), t["python_sites"]
    assert not any(trace.harness_file(f) for s in t["python_sites"] for f in s["stack"]), t["python_sites"]
    text = trace.text([{"loop": "repro", "strategy": "reuse_model", "repeats": [{"result": {"trace": t}}]}])
    lines = text.splitlines()
    lead = next(line for line in lines if line.startswith("  look first"))
    assert lead.startswith("  look first: `kept`, a list, +1.0 item per iteration (len 6), holding numpy.ndarray ("), \
        lead
    assert "kept.append(np.ones(200 * 1024 // 8))" in lead, lead
    named = lines.index("    module global `kept` in arrays_repro.py: a list, +1.0 item per iteration (len 6), holding "
                        f"numpy.ndarray ({trace.readout._kib(lists[0]['bytes_per_iter'])} per iteration)")
    assert named < next(i for i, line in enumerate(lines) if line.startswith("  what holds the objects"))
    assert "kerasbench/" not in text.split("Python allocation sites", 1)[1]


def test_kerasbench_s_own_sites_are_left_out_wherever_its_copy_sits():
    """A record whose worker ran a cache copy of the package (the parent's path differs): its probes' sites are
    recognised by their path and left out of what is printed; the loop shapes' (a control's leak) stay."""
    site = lambda path, kib: {"site": path, "bytes_per_iter": kib * 1024.0, "count_per_iter": 1.0,  # noqa: E731
                              "stack": [path, "/root/.cache/kerasbench/worker/ab12/kerasbench/loops.py:263"]}
    t = {"top": 5, "iterations": 3, "first": 0, "last": 3, "python_bytes_per_iter": 2048.0, "user_sites": [],
         "python_sites": [site("/root/.cache/kerasbench/worker/ab12/kerasbench/probes.py:323", 0.1),
                          site("/venv/lib/python3.11/site-packages/kerasbench/worker.py:84", 0.1),
                          site("/venv/lib/python3.11/site-packages/kerasbench/loops.py:247", 256.0),
                          site("/home/me/project/lib/cache.py:10", 2.0)],
         "types": [], "holders": [], "native_sites": None, "native_note": "n/a", "seconds_in_loop": 0.1,
         "seconds_after": 0.1}
    text = trace.text([{"loop": "repro", "strategy": "reuse_model", "repeats": [{"result": {"trace": t}}]}])
    listed = text.split("Python allocation sites", 1)[1].split("object types", 1)[0]
    assert "probes.py" not in listed and "worker.py" not in listed and listed.count("loops.py") == 1, listed
    assert "/home/me/project/lib/cache.py:10" in listed and "kerasbench/loops.py:263" not in listed


class Registry:
    """Keeps what it is given in a class attribute."""

    kept = []


class Box:
    def __init__(self):
        self.items = []


BOX = Box()


class Filed:
    """Kept by Registry."""


class Boxed:
    """Kept by BOX."""


def test_holders_name_class_attributes_and_attributes_of_globals():
    Registry.kept += [Filed() for _ in range(3)]
    BOX.items += [Boxed() for _ in range(3)]
    try:
        grown = [{"type": f"{__name__}.{c.__qualname__}", "per_iter": 1.0} for c in (Filed, Boxed)]
        held = {h["type"].rsplit(".", 1)[1]: h for h in trace.holders(grown, Counter(), time.perf_counter() + 10)}
    finally:
        Registry.kept.clear()
        BOX.items.clear()
    assert held["Filed"]["held_by"] == ["list (len 3)", "class attribute `Registry.kept`"]
    assert held["Boxed"]["held_by"] == ["list (len 3)", "attribute `items` of Box",
                                        "module global `BOX` in test_trace.py"]
    assert all(h["rooted"] and h["agree"] == 3 for h in held.values())


def test_user_code_is_not_the_stdlib_an_installed_package_or_kerasbench(tmp_path):
    assert trace.user_code(str(tmp_path / "repro.py")) and trace.user_code(__file__)
    assert trace.user_code(str(pathlib.Path(repro.__file__).parent / "examples" / "fit_loop.py"))  # a repro when run
    assert not trace.user_code(json.__file__) and not trace.user_code(pytest.__file__)  # the stdlib, site-packages
    assert not trace.user_code("/usr/lib/python3/dist-packages/numpy/core/numeric.py")
    assert not trace.user_code(trace.__file__) and not trace.user_code("<frozen importlib._bootstrap>")


def test_run_trace_names_the_repro_line_and_the_global_that_holds_its_objects(tmp_path):
    out, path, record_path = io.StringIO(), _my_repro(tmp_path), tmp_path / "traced.json"
    code = main(["run", "--repro", path, "--strategy", "reuse_model", "--iterations", "5", "--warmup", "0",
                 "--trace", "3", "--json", str(record_path)], out=out)
    assert code == 0
    [record] = json.loads(record_path.read_text())["records"]  # conftest validates it against the schema
    t = trace.record_trace(record)
    assert t["user_sites"][0]["site"] == f"{path}:{MY_LINE}"
    assert all(s["site"].startswith(str(tmp_path)) for s in t["user_sites"])  # the worker's frames are kerasbench's
    assert t["holders"][0]["held_by"][1:] == ["module global `blobs` in my_repro.py"]
    text = out.getvalue()
    assert text.index("look first") < text.index("what holds") < text.index("your code") \
        < text.index("Python allocation sites")
    assert "held by list (len 5) ← module global `blobs` in my_repro.py" in text


KEPT_REPRO = '''"""The issue's shape: a large object made on one line (a fit), kept by another (an append)."""
runs = []


class Run:
    def __init__(self):
        self.weights = [[0.0] * 256 for _ in range(16)]


def fit():
    return Run()


def iteration(ctx, model):
    run = fit()  # where it is allocated
    runs.append(run)  # what keeps it
'''


def test_the_trace_leads_with_the_line_that_keeps_what_grows_not_the_one_that_allocates_most(tmp_path):
    path = tmp_path / "kept_repro.py"
    path.write_text(KEPT_REPRO)
    t = in_fresh_process("traced_repro", str(path))
    line = {key: n for n, text in enumerate(KEPT_REPRO.splitlines(), 1) for key in ("allocated", "keeps")
            if f"# where it is {key}" in text or f"# what {key}" in text}
    assert t["user_sites"][0]["bytes_per_iter"] > 10 * max([s["bytes_per_iter"] for s in t["user_sites"][1:]] or [0])
    text = trace.text([{"loop": "repro", "strategy": "reuse_model", "repeats": [{"result": {"trace": t}}]}])
    lines = text.splitlines()
    assert lines[2].startswith("  Python heap growth")  # the trace's heading, then the line to act on
    assert lines[3].startswith("  look first: Run ×6 (+1.0/iteration) kept in `runs`, by "), text  # a long path: cut
    assert lines[3].endswith(f"kept_repro.py:{line['keeps']} `runs.append(run)  # what keeps it`"), text
    assert text.index("what holds") < text.index("your code") < text.index("Python allocation sites")
    shown = [s for s in lines if s.strip().startswith(("runs.append", "run = fit()"))]
    assert shown[0].strip().startswith("runs.append") or len(shown) == 1  # the keeping line first where it grew


HISTORY_REPRO = '''"""Every Keras History kept: each holds its model."""
import numpy as np

histories = []


def setup():
    x = np.random.default_rng(0).standard_normal((64, 8), dtype=np.float32)
    return {"x": x, "y": x[:, :1]}


def build(ctx):
    import tensorflow as tf

    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(4), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def iteration(ctx, model):
    histories.append(model.fit(ctx["x"], ctx["y"], epochs=1, batch_size=32, verbose=0))
'''


@pytest.mark.tf
def test_run_trace_on_kept_keras_histories_names_the_fit_line_and_the_list(tmp_path):
    path, record_path, out = tmp_path / "history_repro.py", tmp_path / "traced.json", io.StringIO()
    path.write_text(HISTORY_REPRO)
    code = main(["run", "--repro", str(path), "--strategy", "clear_session_del_gc", "--iterations", "3",
                 "--warmup", "1", "--trace", "3", "--json", str(record_path)], out=out)
    assert code == 0, out.getvalue()
    t = trace.record_trace(json.loads(record_path.read_text())["records"][0])
    fit = next(n for n, line in enumerate(HISTORY_REPRO.splitlines(), 1) if "model.fit" in line)
    assert t["user_sites"][0]["site"] == f"{path}:{fit}"  # the fit, not TF's ops.py
    assert sum(s["bytes_per_iter"] for s in t["user_sites"]) > 0.9 * t["python_bytes_per_iter"]
    history = t["holders"][0]
    assert history["type"].endswith(".History") and history["alive"] == 4
    assert history["held_by"] == ["list (len 4)", "module global `histories` in history_repro.py"]
    text = out.getvalue()
    lead = next(line for line in text.splitlines() if line.startswith("  look first"))
    assert lead.startswith("  look first: History ×4 (+1.0/iteration) kept in `histories`, by "), lead
    assert f"history_repro.py:{fit} `histories.append(model.fit(" in lead, lead  # a long path is cut at its start
