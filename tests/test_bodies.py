"""Functions without an importable name (a notebook cell's, a lambda, a nested one, a script's) measured by value, and
the body's identity its records keep (kerasbench.api)."""

import json
import pathlib
import re
import subprocess
import sys
import textwrap
import threading
import types

import pytest

import kerasbench
from kerasbench import UsageError, api

ROOT = pathlib.Path(__file__).resolve().parent.parent
QUICK = dict(iterations=3, warmup=1)
CELL = """
KEPT = []

def body(ctx):
    ctx.append([0] * 100)
    return len(ctx)
"""


def module_body():
    return [0] * 100


module_lambda = lambda: None  # noqa: E731 -- bound at module level: imported by this name


@pytest.fixture
def notebook(monkeypatch):
    """A namespace like a Jupyter kernel's: `__main__` without a file; `run(source)` defines what a cell defines."""
    main = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", main)

    def run(source):
        exec(compile(source, "<cell>", "exec"), main.__dict__)
        return main

    return run


def load_in_fresh_process(path, before=""):
    """Run the generated repro file's hooks in a fresh interpreter (no worker, no TF): iteration's result printed."""
    code = f"{before}import runpy; ns = runpy.run_path({str(path)!r}); print(ns['iteration'](ns['setup'](), None))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT))


def test_functions_without_a_name_go_by_value_and_load_in_a_fresh_process(tmp_path, notebook):
    def nested(ctx):
        return len(ctx) + 1

    class Counter:
        def count(self, ctx):
            return len(ctx) + 2

    cell = notebook(CELL)
    for body, setup, kind, printed in [(nested, lambda: [1, 2], "a nested function", "3"),
                                       (Counter().count, lambda: [], "a bound method", "2"),
                                       (cell.body, lambda: [], "defined where no file holds it", "1")]:
        folder = tmp_path / kind.replace(" ", "_")
        folder.mkdir()
        path = api.repro_for(body, setup, str(folder))
        text = pathlib.Path(path).read_text()
        assert (folder / api.BY_VALUE).exists() and f"_by_value('body', \"the body {body.__name__!r} ({kind}" in text
        assert "_by_value('setup'" in text and not api.importable(body)
        done = load_in_fresh_process(path)
        assert done.returncode == 0 and done.stdout.split() == [printed], done.stderr


def test_a_function_imported_by_name_writes_no_pickle(tmp_path):
    for body, name in [(module_body, "module_body"), (module_lambda, "module_lambda")]:
        path = api.repro_for(body, folder=str(tmp_path))
        assert f"_load('test_bodies', {name!r}," in open(path).read()
        assert not (tmp_path / api.BY_VALUE).exists()


def test_identity_is_the_name_and_a_hash_of_the_source(notebook):
    assert api.identity(module_body)[0] == "test_bodies:module_body"
    assert api.identity(module_lambda)[0] == "test_bodies:module_lambda"

    def nested():
        pass

    name, sha = api.identity(nested)
    assert name == "test_bodies:test_identity_is_the_name_and_a_hash_of_the_source.<locals>.nested"
    assert re.fullmatch("[0-9a-f]{12}", sha) and sha != api.identity(module_body)[1]
    # exec'd (no source to read): the bytecode, names and constants decide; the same source gives the same hash
    first = api.identity(notebook(CELL).body)
    assert first[0] == "__main__:body" and first == api.identity(notebook(CELL).body)
    assert api.identity(notebook(CELL.replace("100", "101")).body)[1] != first[1]
    assert api.identity(notebook(CELL.replace("ctx.append", "ctx.extend")).body)[1] != first[1]


def test_a_function_cloudpickle_cannot_serialize_is_one_line_saying_what_to_do(tmp_path):
    lock = threading.Lock()

    def holds_a_lock():
        with lock:
            pass

    with pytest.raises(UsageError, match=r"cannot send the body 'holds_a_lock' \(a nested function\) to the worker: "
                                         r"cloudpickle cannot serialize it \(TypeError: .*lock.*\); make what it uses "
                                         r"in setup= instead"):
        api.repro_for(holds_a_lock, folder=str(tmp_path))


def test_a_worker_without_cloudpickle_says_what_to_do(tmp_path):
    path = api.repro_for(lambda: None, folder=str(tmp_path))
    done = load_in_fresh_process(path, before="import sys; sys.modules['cloudpickle'] = None; ")
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == (
        f"ImportError: this environment ({sys.executable}) lacks cloudpickle, which the body '<lambda>' (a lambda) "
        "needs: pip install cloudpickle into it, or define the function at module level in a .py file")


def test_a_worker_on_another_python_says_what_to_do(tmp_path):
    path = pathlib.Path(api.repro_for(lambda: None, folder=str(tmp_path)))
    here = "%d.%d" % sys.version_info[:2]
    path.write_text(path.read_text().replace(f"made_on, here = {here!r},", "made_on, here = '3.0',"))
    last = load_in_fresh_process(path).stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: the body '<lambda>' (a lambda) was serialized by value on Python 3.0, "
                           f"which this environment's Python {here} cannot load")


# ---------------------------------------------------------------- in workers (the repro loop imports TF)


@pytest.mark.tf
def test_a_notebook_cells_function_is_measured_and_named_in_the_record(notebook):
    body = notebook(CELL).body
    [record] = kerasbench.measure(body=body, setup=lambda: [], **QUICK)
    assert record["status"] == "ok" and record["summary"]["measured"] == [3]
    assert (record["spec"]["body"], record["spec"]["body_sha256"]) == api.identity(body) == ("__main__:body",
                                                                                             api.identity(body)[1])


SCRIPT = """
import json, sys
import kerasbench

with open(sys.argv[1], "a") as f:  # each time this file runs: the worker must not run it again
    f.write(__name__ + "\\n")

KEPT = []


def f():
    KEPT.append([0] * 1000)


if __name__ == "__main__":
    records = kerasbench.measure(body=f, iterations=3, warmup=1)
    print(json.dumps([[r["status"], r["spec"]["body"]] for r in records]))
"""


@pytest.mark.tf
def test_a_function_of_a_script_run_as_main_is_measured(tmp_path):
    script, ran = tmp_path / "script.py", tmp_path / "ran.txt"
    script.write_text(textwrap.dedent(SCRIPT))
    done = subprocess.run([sys.executable, str(script), str(ran)], capture_output=True, text=True, cwd=str(tmp_path),
                          timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [["ok", "__main__:f"]]
    assert ran.read_text().split() == ["__main__"]  # sent by value: the script ran once, not again in the worker


@pytest.mark.tf
def test_a_release_environment_without_cloudpickle_fails_in_one_line(tmp_path):
    """The worker on another interpreter (`tf=`'s environment) that cannot import cloudpickle: one UsageError line."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "cloudpickle.py").write_text("raise ModuleNotFoundError(\"No module named 'cloudpickle'\")\n")
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\nPYTHONPATH={blocker}:$PYTHONPATH exec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    with pytest.raises(UsageError) as failed:
        kerasbench.measure(body=lambda: None, python=str(python), **QUICK)
    message = str(failed.value)
    assert message.startswith("The body test_bodies:") and "\n" not in message and message.endswith(
        "lacks cloudpickle, which the body '<lambda>' (a lambda) needs: pip install cloudpickle into it, or define "
        "the function at module level in a .py file")
