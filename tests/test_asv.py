"""The asv suite: discovered without TensorFlow, params from the registries, results that round-trip."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from conftest import clone_for_asv

from kerasbench import METRICS, SCHEMA_VERSION, strategies_for
from kerasbench.strategies import get_strategy
from kerasbench.loops import builtin_loops
from kerasbench.rule import PROTOCOL_VERSION

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


def _discover(device: str) -> dict:
    pytest.importorskip("asv_runner")
    code = DISCOVER.format(root=str(ROOT), bench=str(ROOT / "benchmarks"))
    env = {**os.environ, "KERASBENCH_DEVICE": device}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env=env).stdout
    return json.loads(out)


@pytest.fixture(scope="module")
def discovered():
    return _discover("cpu")


@pytest.fixture(scope="module")
def discovered_gpu():
    return _discover("gpu")


def _can_run_on_cpu(strategy: str) -> bool:
    return not get_strategy(strategy).needs_gpu


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
    assert set(by_loop) == set(builtin_loops())  # repro needs a user file: not an asv benchmark
    for loop, benches in by_loop.items():
        for b in benches:
            assert b["params"] == [[repr(s) for s in strategies_for(loop) if _can_run_on_cpu(s)]], b["name"]


def test_a_cpu_machine_has_no_rows_or_tables_of_gpu_only_n_a_and_the_rest_keep_names_params_and_versions(
        discovered, discovered_gpu):
    """Before: 6 of every 17 rows n/a on a CPU (gpu_*, torch_empty_cache), and track_gpu_* tables all n/a. The GPU
    machine (KERASBENCH_DEVICE=gpu, asv.gpu.json) keeps every strategy and metric; a benchmark both have keeps its
    name and version, and the CPU's params are the GPU's less the GPU strategies, in the same order."""
    cpu = {b["name"]: b for b in discovered["benchmarks"]}
    gpu = {b["name"]: b for b in discovered_gpu["benchmarks"]}
    assert set(cpu) < set(gpu)
    assert {n.rsplit(".track_", 1)[1] for n in set(gpu) - set(cpu)} == {"gpu_alloc_peak", "gpu_reserved_peak"}
    for name, b in cpu.items():
        assert b["version"] == gpu[name]["version"] and b["unit"] == gpu[name]["unit"]
        loop = name.split(".")[0]
        assert gpu[name]["params"] == [[repr(s) for s in strategies_for(loop)]], name
        assert b["params"] == [[p for p in gpu[name]["params"][0] if _can_run_on_cpu(eval(p))]], name
    sweep = cpu["sweep.Sweep.track_growth_per_iter"]["params"][0]
    assert not any("gpu" in p or "torch" in p for p in sweep)
    assert "'jax_clear_caches'" in sweep  # the backend is known per environment, not at asv's one discovery


def test_tracked_metrics_have_units_and_the_schema_version(discovered):
    for b in discovered["benchmarks"]:
        metric = b["name"].rsplit(".track_", 1)[1]
        assert b["type"] == "track" and b["unit"] == METRICS[metric].unit
        assert f"kerasbench-{SCHEMA_VERSION}-" in b["version"]
        assert f"-protocol{PROTOCOL_VERSION}" in b["version"], b["version"]
    assert any(b["name"] == "tf1_graph.Tf1Graph.track_graph_ops" for b in discovered["benchmarks"])
    readme = (ROOT / "README.md").read_text()
    assert f"kerasbench-{SCHEMA_VERSION}-<profile>-protocol{PROTOCOL_VERSION}" in readme  # the README says so


def test_asv_config_pins_exactly():
    conf = _conf("asv.conf.json")
    assert conf["repo"] == "."
    # forkserver forks each track_ process from one that imported the benchmarks: they must not import TF
    # (test_discovery_does_not_import_tensorflow), and every config says so alike
    assert {_conf(c)["launch_method"] for c in ("asv.conf.json", "asv.matrix.json", "asv.gpu.json")} == {"forkserver"}
    assert all(conf[k].startswith(".asv/") for k in ("env_dir", "results_dir", "html_dir"))
    for name, versions in conf["matrix"]["req"].items():
        assert all(v and v[0].isdigit() for v in versions), f"{name}: exact pins only (asv turns ranges into ==)"


# A small results tree made by real `asv run`s of the control loop (no TF) on this interpreter,
# as three machines: a normal one, a "GPU" box without a GPU (every cell skipped), and one whose
# memory cap stops the leaking controls (failed cells, the run goes on).
MACHINES = {
    "cpubox": {},
    "gpubox": {"KERASBENCH_DEVICE": "gpu"},
    "tinybox": {"KERASBENCH_LEAK_KIB": str(256 * 1024), "KERASBENCH_MEMORY_CAP": "400MiB"},  # 5 × 256 MiB
}


@pytest.fixture(scope="module")
def asv_tree(tmp_path_factory):
    work, repo = clone_for_asv(tmp_path_factory, "asv")
    logs = {}
    for machine, extra in MACHINES.items():
        # ASV_PYTHONPATH: the clone's kerasbench, not one installed elsewhere (asv drops PYTHONPATH)
        env = dict(os.environ, KERASBENCH_PROFILE="quick", HOME=str(work), ASV_PYTHONPATH=str(repo), **extra)
        env.pop("KERASBENCH_RECORDS_DIR", None)
        if machine != "cpubox":  # cpubox writes where a user's run does: <repo>/.asv/records
            env["KERASBENCH_RECORDS_DIR"] = str(work / "records" / machine)
        subprocess.run(["asv", "machine", "--yes", "--machine", machine], cwd=repo, env=env, check=True,
                       capture_output=True)
        proc = subprocess.run(["asv", "run", "--python=same", "--set-commit-hash", "HEAD", "-b", "^control",
                               "--machine", machine, "--show-stderr"], cwd=repo, env=env, capture_output=True,
                              text=True)
        logs[machine] = (proc.returncode, proc.stdout + proc.stderr)
    return repo, work, logs


def _results(repo, machine):
    from asv.results import iter_results_for_machine

    results = list(iter_results_for_machine(str(repo / ".asv" / "results"), machine))
    assert len(results) == 1
    return results[0]


PARAMS = [[repr(s) for s in strategies_for("control")]]


def test_results_round_trip(asv_tree):
    repo, work, logs = asv_tree
    assert logs["cpubox"][0] == 0, logs["cpubox"][1][-3000:]
    result = _results(repo, "cpubox")
    # --python=same: asv passes no ASV_* variables and runs setup_cache in a folder it deletes; the
    # records still land in the repository, under this commit
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout[:8]
    [found] = (repo / ".asv" / "records").glob(f"*/{commit}-existing-py*/control.json")
    records = json.loads(found.read_text())
    assert records["profile"] == "quick"
    by_strategy = {r["strategy"]: r for r in records["records"]}
    for metric in ("growth_per_iter", "growth_ci_low", "peak_loop", "retained", "seconds_per_iter", "objects_per_iter"):
        values = result.get_result_value(f"control.Control.track_{metric}", PARAMS)
        expected = [by_strategy[s]["summary"][metric] for s in strategies_for("control")]
        assert values == pytest.approx(expected), metric


def test_the_records_asv_wrote_match_the_record_schema(asv_tree):
    jsonschema = pytest.importorskip("jsonschema")
    from kerasbench.record import json_schema

    repo, work, _ = asv_tree
    schema = json_schema()
    record_schema = jsonschema.Draft202012Validator(schema)
    file_schema = jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/RecordsFile"})
    files = sorted(repo.glob(".asv/records/*/*/control.json")) + sorted(work.glob("records/*/*/*/control.json"))
    assert len(files) == 2, files  # cpubox and tinybox (gpubox skips without measuring)
    for path in files:
        payload = json.loads(path.read_text())
        file_schema.validate(payload)
        for record in payload["records"]:
            record_schema.validate(record)


def test_skipped_pairs_are_nan_and_do_not_abort(asv_tree):
    repo, _, logs = asv_tree
    values = _results(repo, "gpubox").get_result_value("control.Control.track_growth_per_iter", PARAMS)
    assert all(v != v for v in values)  # NaN: asv's "n/a"
    assert "no GPU visible to TensorFlow" in logs["gpubox"][1]


def test_stopped_workers_fail_with_their_reason_and_the_run_goes_on(asv_tree):
    repo, _, logs = asv_tree
    values = dict(zip(strategies_for("control"),
                      _results(repo, "tinybox").get_result_value("control.Control.track_peak_loop", PARAMS)))
    assert values["control_noop"] > 0
    assert values["control_leak_native"] is None and values["control_leak_python"] is None  # asv: failed
    assert "exceeded memory cap" in logs["tinybox"][1]


def test_dashboard_renders_in_headless_chromium(asv_tree, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright (test extra)")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium; .ci/run does)")
    from kerasbench.dashboard import publish_dashboard

    repo, work, _ = asv_tree
    env_home = os.environ.get("HOME")
    cwd = os.getcwd()
    try:
        os.environ["HOME"] = str(work)
        os.chdir(repo)
        html = publish_dashboard("asv.conf.json", out=open(os.devnull, "w"))
    finally:
        os.chdir(cwd)
        os.environ["HOME"] = env_home or ""
    import functools
    import http.server
    import threading

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=html)
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/index.html"
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(base + "#control.Control.track_growth_per_iter")
            page.wait_for_selector("canvas.flot-base", timeout=20000)
            page.wait_for_timeout(500)
            page.screenshot(path=str(tmp_path / "graph.png"))
            text = page.inner_text("body")
            browser.close()
    finally:
        server.shutdown()
    assert errors == []
    for machine in MACHINES:
        assert machine in text  # one dashboard, a machine selector per results folder
    for strategy in strategies_for("control"):
        assert strategy in text


def _conf(name):
    from kerasbench.asvconf import read_config

    return read_config(str(ROOT / name))


def _pins(name, tf_key):
    from kerasbench.asvconf import includes

    return {inc["req"][tf_key]: inc["req"] for inc in includes(str(ROOT / name))}  # one per release


def test_matrix_has_every_minor_release_once_with_its_keras():
    pins = _pins("asv.matrix.json", "tensorflow-cpu")
    assert sorted({v.rsplit(".", 1)[0] for v in pins}, key=lambda v: int(v.split(".")[1])) == \
        [f"2.{m}" for m in range(12, 22)]
    for tf, req in pins.items():
        keras_major = 2 if int(tf.split(".")[1]) <= 15 else 3
        assert int(req["keras"].split(".")[0]) == keras_major, tf
        assert req["pip+asv_runner"] == "0.3.2"
        if keras_major == 2:  # Keras 2 shipped inside TF: same minor
            assert req["keras"].rsplit(".", 1)[0] == tf.rsplit(".", 1)[0]


def test_matrix_has_the_older_minor_releases_once_on_python_3_10_with_their_keras_and_numpy_below_1_24():
    """TF 2.8-2.11 (no cp311 wheels): their latest patch each, on CPython 3.10, with the pins `run --tf V --python
    3.10` derives (the oldest release entry's, numpy as OLDER_PINS says), and in docs/asv.md's matrix table."""
    from kerasbench import releases

    conf = _conf("asv.matrix.json")
    pins = _pins("asv.matrix.json", "tensorflow-cpu")
    oldest = pins[min(pins, key=releases.version_key)]
    older = [inc for inc in conf["include"] if releases.version_key(inc["req"]["tensorflow-cpu"]) < (2, 12)]
    assert [inc["req"]["tensorflow-cpu"] for inc in older] == ["2.8.4", "2.9.3", "2.10.1", "2.11.1"]
    assert [releases.version_key(inc["req"]["tensorflow-cpu"])[:2] for inc in older] == list(releases.OLDER_MINORS)
    table = (ROOT / "docs" / "asv.md").read_text().split("### The TensorFlow matrix", 1)[1].split("###", 1)[0]
    for inc in older:
        tf, req = inc["req"]["tensorflow-cpu"], inc["req"]
        assert inc["python"] == "3.10" and set(inc) == {"python", "req"}, tf  # no env: a release's own entry
        assert req["keras"].rsplit(".", 1)[0] == tf.rsplit(".", 1)[0], tf  # Keras 2 of the same minor
        assert req == {**oldest, **releases.OLDER_PINS, "tensorflow-cpu": tf, "keras": req["keras"]}, tf
        assert releases.version_key(req["numpy"]) < (1, 24), tf
        assert f"| {tf} | {req['keras']} | {req['numpy']} | {req['scipy']} |" in table, tf


def test_default_config_is_the_newest_matrix_entry():
    pins = _pins("asv.matrix.json", "tensorflow-cpu")
    newest = max(pins, key=lambda v: tuple(map(int, v.split("."))))
    default = {k: v[0] for k, v in _conf("asv.conf.json")["matrix"]["req"].items()}
    assert default == pins[newest]


def test_gpu_config_matches_the_cpu_pins_and_the_readme():
    cpu = _pins("asv.matrix.json", "tensorflow-cpu")
    gpu = _pins("asv.gpu.json", "tensorflow")
    conf = _conf("asv.gpu.json")
    assert conf["results_dir"] == _conf("asv.conf.json")["results_dir"]  # one results tree
    assert "[gpu]" in conf["install_command"][0]
    readme = (ROOT / "docs" / "asv.md").read_text()
    section = readme.split("### On a GPU machine", 1)[1].split("\n## ", 1)[0]
    for tf, req in gpu.items():
        assert {k: v for k, v in req.items() if k != "tensorflow"} == \
            {k: v for k, v in cpu[tf].items() if k != "tensorflow-cpu"}, tf
        assert tf in section, f"README's GPU section does not name TF {tf}"
    for inc in conf["include"]:
        assert inc["env_nobuild"] == {"KERASBENCH_DEVICE": "gpu"}
    table = readme.split("### The TensorFlow matrix", 1)[1].split("###", 1)[0]
    for tf, req in cpu.items():
        assert f"| {tf} | {req['keras']} | {req['numpy']} | {req['scipy']} |" in table, tf


def test_envs_lists_matrix_environments():
    pytest.importorskip("asv")
    from kerasbench.environment import environments

    envs = environments(str(ROOT / "asv.matrix.json"))
    assert len(envs) == 22  # ten releases, two tf_keras, two backend, four Python and four older releases' entries
    [(name, reqs)] = environments(str(ROOT / "asv.matrix.json"), tf="2.15.1")
    assert "tensorflow-cpu2.15.1" in name and reqs["keras"] == "2.15.0"


def test_publish_without_npm_keeps_the_cdn_links_and_succeeds(asv_tree, tmp_path, monkeypatch):
    """A fresh machine has Python and pip, not Node.js: the quick start's publish must still work."""
    import io

    from kerasbench import dashboard

    repo, work, _ = asv_tree
    monkeypatch.setenv("HOME", str(work))
    monkeypatch.setenv("KERASBENCH_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(dashboard.shutil, "which", lambda name: None)
    monkeypatch.chdir(repo)
    out = io.StringIO()
    html = dashboard.publish_dashboard("asv.conf.json", out=out)
    assert "npm not found" in out.getvalue()
    page = (pathlib.Path(html) / "index.html").read_text()
    assert "https://code.jquery.com/jquery-3.3.1.min.js" in page and "vendor/" not in page


def test_cpu_extra_installs_what_asv_conf_json_says():
    """`asv run --python=same` labels results with asv.conf.json's pins, not with what is installed:
    the quick start's `pip install -e '.[cpu]'` must install exactly those."""
    import tomllib

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["cpu"]
    pinned = dict(item.split("==") for item in extra if "==" in item)  # kerasbench[releases]: asv itself, unpinned
    req = _conf("asv.conf.json")["matrix"]["req"]
    conf = {name.removeprefix("pip+"): versions[0] for name, versions in req.items()}
    assert pinned == conf


@pytest.mark.parametrize("name", ["asv.conf.json", "asv.matrix.json", "asv.gpu.json"])
def test_configs_build_only_the_project_wheel(name):
    """asv 0.6's default build leaves every dependency's wheel beside ours and then refuses to choose."""
    conf = _conf(name)
    assert all("--no-deps" in cmd for cmd in conf["build_command"])
    assert not any("--force-reinstall" in cmd for cmd in conf["install_command"])  # would re-resolve the pins
