"""The asv suite: discovered without TensorFlow, params from the registries, results that round-trip."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from kerasbench import LOOPS, METRICS, SCHEMA_VERSION, strategies_for

ROOT = pathlib.Path(__file__).resolve().parent.parent
PREFIXES = ("time_", "timeraw_", "mem_", "peakmem_", "track_")
HOOKS = {"setup", "teardown", "setup_cache"}

DISCOVER = """
import json, sys
sys.path.insert(0, {root!r})
from asv_runner.discovery import disc_benchmarks
found = [{{"name": b.name, "params": b.params, "unit": b.unit, "version": b.version, "type": b.type}}
         for b in disc_benchmarks({bench!r})]
import benchmarks
classes = {{}}
import inspect, pkgutil, importlib
for m in pkgutil.iter_modules(benchmarks.__path__):
    mod = importlib.import_module("benchmarks." + m.name)
    for name, cls in vars(mod).items():
        if inspect.isclass(cls) and not name.startswith("_") and cls.__module__ == mod.__name__:
            classes[m.name + "." + name] = [a for a in dir(cls) if callable(getattr(cls, a)) and not a.startswith("_")]
print(json.dumps({{"benchmarks": found, "classes": classes, "tf": "tensorflow" in sys.modules}}))
"""


@pytest.fixture(scope="module")
def discovered():
    pytest.importorskip("asv_runner")
    code = DISCOVER.format(root=str(ROOT), bench=str(ROOT / "benchmarks"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return json.loads(out)


def test_discovery_does_not_import_tensorflow(discovered):
    assert discovered["tf"] is False


def test_every_public_method_is_a_benchmark_or_a_hook(discovered):
    for cls, methods in discovered["classes"].items():
        for name in methods:
            assert name in HOOKS or name.startswith(PREFIXES), f"{cls}.{name} would never run"


def test_one_class_per_loop_shape_with_registry_params(discovered):
    by_loop = {}
    for b in discovered["benchmarks"]:
        module = b["name"].split(".")[0]
        by_loop.setdefault(module, []).append(b)
    assert set(by_loop) == set(LOOPS)
    for loop, benches in by_loop.items():
        for b in benches:
            assert b["params"] == [[repr(s) for s in strategies_for(loop)]], b["name"]


def test_tracked_metrics_have_units_and_the_schema_version(discovered):
    for b in discovered["benchmarks"]:
        metric = b["name"].rsplit(".track_", 1)[1]
        assert b["type"] == "track" and b["unit"] == METRICS[metric].unit
        assert f"kerasbench-{SCHEMA_VERSION}-" in b["version"]
    assert any(b["name"] == "tf1_graph.Tf1Graph.track_graph_ops" for b in discovered["benchmarks"])


def test_asv_config_pins_exactly():
    conf = json.loads("\n".join(l for l in (ROOT / "asv.conf.json").read_text().splitlines() if not l.strip().startswith("//")))
    assert conf["repo"] == "." and conf["launch_method"] == "spawn"
    assert all(conf[k].startswith(".asv/") for k in ("env_dir", "results_dir", "html_dir"))
    for name, versions in conf["matrix"]["req"].items():
        assert all(v and v[0].isdigit() for v in versions), f"{name}: exact pins only (asv turns ranges into ==)"


@pytest.fixture(scope="module")
def asv_results(tmp_path_factory):
    """A real `asv run` of the control loop (no TF) on this interpreter, into a scratch results tree."""
    if shutil.which("asv") is None:
        pytest.skip("asv is not installed")
    work = tmp_path_factory.mktemp("asv")
    subprocess.run(["git", "clone", "-q", str(ROOT), str(work / "repo")], check=True)
    repo = work / "repo"
    env = dict(os.environ, KERASBENCH_PROFILE="quick", KERASBENCH_RECORDS_DIR=str(work / "records"), HOME=str(work))
    subprocess.run(["asv", "machine", "--yes", "--machine", "testbox"], cwd=repo, env=env, check=True, capture_output=True)
    proc = subprocess.run(["asv", "run", "--python=same", "--set-commit-hash", "HEAD", "-b", "^control",
                           "--machine", "testbox", "--show-stderr"], cwd=repo, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return repo, work


def test_results_round_trip(asv_results):
    from asv.results import iter_results_for_machine

    repo, work = asv_results
    results = list(iter_results_for_machine(str(repo / ".asv" / "results"), "testbox"))
    assert len(results) == 1
    result = results[0]
    records = json.loads(next((work / "records").rglob("control.json")).read_text())
    assert records["profile"] == "quick"
    by_strategy = {r["strategy"]: r for r in records["records"]}
    for metric in ("growth_per_iter", "peak_loop", "retained", "seconds_per_iter", "objects_per_iter"):
        values = result.get_result_value(f"control.Control.track_{metric}", [[repr(s) for s in strategies_for("control")]])
        expected = [by_strategy[s]["summary"][metric] for s in strategies_for("control")]
        assert values == pytest.approx(expected), metric
