"""Keras 3's backend axis (tensorflow, jax, torch): the spec's field, which pairs a run names, the loops and
strategies that are one backend's, how records of another backend are labelled and judged. The measured runs on
jax and torch need those frameworks: skipped without them (docs/backends.md says how to run them)."""

import json
import os
import subprocess
import sys

import pytest

from kerasbench import _compat, loading
from kerasbench.errors import UsageError
from kerasbench.record import framework_text
from kerasbench.rule import settling
from kerasbench.runner import _skipped, _worker_env
from kerasbench.selection import pairs_for
from kerasbench.spec import RunSpec
from kerasbench.strategies import STRATEGIES, get_strategy


@pytest.fixture
def no_keras_config(tmp_path, monkeypatch):
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    return tmp_path


def test_the_backend_is_the_variable_then_keras_json_then_tensorflow(no_keras_config, monkeypatch):
    assert _compat.backend() == "tensorflow"
    (no_keras_config / "keras.json").write_text(json.dumps({"backend": "torch"}))
    assert _compat.backend() == "torch"
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    assert _compat.backend() == "jax" and not _compat.on_tf()


def test_an_unknown_backend_is_one_line_naming_the_valid_ones():
    with pytest.raises(UsageError, match=r"Unknown backend. Received: backend='mxnet'. Expected one of: jax, "
                       r"tensorflow, torch."):
        RunSpec(loop="sweep", strategy="reuse_model", backend="mxnet").validate()
    assert RunSpec(loop="sweep", strategy="reuse_model", backend="jax").validate().backend == "jax"


def test_the_worker_gets_the_specs_backend_and_jax_stays_off_a_hidden_gpu(no_keras_config):
    env = _worker_env(RunSpec(loop="sweep", strategy="reuse_model", backend="jax").validate())
    assert env["KERAS_BACKEND"] == "jax" and env["JAX_PLATFORMS"] == "cpu"
    assert "KERAS_BACKEND" not in _worker_env(RunSpec(loop="sweep", strategy="reuse_model").validate())


def test_all_names_the_strategies_of_the_chosen_backend_only(no_keras_config):
    on_tf = {s for _, s in pairs_for("sweep", "all", "cpu")}
    on_jax = {s for _, s in pairs_for("sweep", "all", "cpu", "jax")}
    on_torch = {s for _, s in pairs_for("sweep", "all", "cpu", "torch")}
    assert "jax_clear_caches" not in on_tf and "jax_clear_caches" in on_jax
    assert {"reset_default_graph_only", "clear_kernel_cache_only"} <= on_tf
    assert not {"reset_default_graph_only", "clear_kernel_cache_only"} & (on_jax | on_torch)
    assert "torch_empty_cache" not in on_torch  # a GPU strategy: named with --device gpu only
    assert "torch_empty_cache" in {s for _, s in pairs_for("sweep", "all", "gpu", "torch")}
    # named one by one, a strategy stays, and its pair says why it skips, without a worker
    assert pairs_for("sweep", "jax_clear_caches", "cpu") == [("sweep", "jax_clear_caches")]
    reason = _skipped(RunSpec(loop="sweep", strategy="jax_clear_caches", backend="tensorflow").validate())
    assert reason == "strategy jax_clear_caches runs on the jax backend only (here: tensorflow)"
    assert _skipped(RunSpec(loop="sweep", strategy="jax_clear_caches", backend="jax").validate()) is None


def test_each_strategy_of_one_backend_says_which():
    backends = {name: s.backend for name, s in STRATEGIES.items() if s.backend}
    assert backends == {"reset_default_graph_only": "tensorflow", "clear_kernel_cache_only": "tensorflow",
                        "gpu_growth_off": "tensorflow", "gpu_growth_on": "tensorflow",
                        "gpu_malloc_async": "tensorflow", "jax_clear_caches": "jax", "torch_empty_cache": "torch"}
    assert get_strategy("rebuild_no_clear+jax_clear_caches").backend == "jax"  # a composed step inherits it


def test_tf_only_loops_skip_on_another_backend_with_the_reason(tmp_path, no_keras_config):
    """No framework is imported for it: the worker skips before (cheap, and true without jax installed)."""
    out = tmp_path / "r.json"
    run = subprocess.run([sys.executable, "-m", "kerasbench", "run", "--loop", "tf_data,tf1_graph", "--backend", "jax",
                          "--strategy", "reuse_dataset,tf1_sess_close", "--iterations", "2", "--json", str(out)],
                         capture_output=True, text=True, env={**os.environ, "KERASBENCH_NO_CALIBRATE": "1"},
                         timeout=300)
    assert run.returncode == 0, run.stderr
    records = json.loads(out.read_text())["records"]
    assert [r["status"] for r in records] == ["skipped", "skipped"]
    reasons = [r["repeats"][0]["reason"] for r in records]
    assert reasons[0] == ("loop tf_data runs on the tensorflow backend only (tf.data's pipeline is TensorFlow's; "
                          "KERAS_BACKEND=jax here)")
    assert reasons[1].startswith("loop tf1_graph runs on the tensorflow backend only")


def _env(backend, tf="2.21.0"):
    env = {"python": "3.11.7", "numpy": "2.4.6", "keras": "3.13.2", "keras_package": "keras", "tensorflow": tf,
           "keras_backend": backend}
    if backend != "tensorflow":
        env["backend_versions"] = {"jax": {"jax": "0.10.2", "jaxlib": "0.10.2"}, "torch": {"torch": "2.13.0"}}[backend]
    return env


def test_what_ran_is_said_per_backend():
    assert framework_text(_env("tensorflow")) == "TF 2.21.0, Keras 3.13.2"
    assert framework_text(_env("jax")) == "Keras 3.13.2 on jax 0.10.2 (TF 2.21.0 installed, not imported)"
    assert framework_text(_env("torch", tf=None)) == "Keras 3.13.2 on torch 2.13.0"
    assert framework_text({"tensorflow": "2.12.1", "keras": "2.12.0"}) == "TF 2.12.1, Keras 2.12.0"  # no backend: TF


def test_a_record_of_another_backend_is_a_side_of_its_own(tmp_path):
    from kerasbench.record import records_payload
    from kerasbench.rule import spec_floors
    from kerasbench.summary import make_record

    spec = RunSpec(loop="inference", strategy="reuse_model", iterations=4, warmup=0).validate()
    files = []
    for backend, tf in (("tensorflow", "2.21.0"), ("jax", "2.21.0"), ("torch", None)):
        repeat = {"repeat": 0, "status": "skipped", "reason": "test", "result": None, "environment": _env(backend, tf)}
        record = make_record(spec, [repeat], spec_floors(spec))
        path = tmp_path / f"{backend}.json"
        path.write_text(json.dumps(records_payload([record])))
        files.append(str(path))
    labels = sorted(version for _, _, version in loading.load_records(files))
    assert labels == ["2.21.0", "2.21.0+jax", "keras-3.13.2+torch"]


def test_tfs_heap_settling_judges_another_backend_as_another_environment():
    data = {"made_on": [("2.21.0", "3.13.2")]}
    assert not settling.foreign(data, {"tensorflow": "2.21.0", "keras": "3.13.2"})
    assert not settling.foreign(data, {"tensorflow": "2.21.0", "keras": "3.13.2", "keras_backend": "tensorflow"})
    assert settling.foreign(data, {"tensorflow": "2.21.0", "keras": "3.13.2", "keras_backend": "jax"})


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_every_keras_loop_runs_on_the_backend(backend, tmp_path):
    """Two iterations of each Keras loop's first strategies on jax / torch: ok, the backend recorded, JAX's traces
    and compilations counted (a new jitted function per iteration retraces), torch said to be eager."""
    pytest.importorskip(backend)
    pytest.importorskip("keras", minversion="3")
    out = tmp_path / "r.json"
    strategies = "reuse_model,function_in_loop,clear_session_del_gc"
    run = subprocess.run([sys.executable, "-m", "kerasbench", "run", "--backend", backend, "--loop",
                          "sweep,inference,batch_stream", "--strategy", strategies, "--iterations", "3", "--warmup",
                          "1", "--json", str(out)], capture_output=True, text=True, timeout=900,
                         env={**os.environ, "KERASBENCH_NO_CALIBRATE": "1"})
    assert run.returncode == 0, run.stderr
    records = {(r["loop"], r["strategy"]): r for r in json.loads(out.read_text())["records"]}
    assert all(r["status"] == "ok" for r in records.values()), {k: r["status"] for k, r in records.items()}
    env = records[("inference", "reuse_model")]["environment"]
    assert env["keras_backend"] == backend and env["backend_versions"][backend]
    result = records[("inference", "function_in_loop")]["repeats"][0]["result"]
    if backend == "jax":
        traces = result["series"]["all_traces"]
        assert traces[-1] - traces[0] == len(traces) - 1  # one new jitted forward a measured iteration: one trace
        assert result["compilations"] >= 1
    else:
        assert result["all_traces"] is None and result["trace_hook"].startswith("torch: eager")


class _FakeTorchCuda:
    def __init__(self):
        self.allocated, self.peak = 5 << 20, 9 << 20

    def is_available(self):
        return True

    def memory_allocated(self, device):
        return self.allocated

    def max_memory_allocated(self, device):
        return self.peak

    def reset_peak_memory_stats(self, device):
        self.peak = self.allocated


class _FakeJaxDevice:
    def memory_stats(self):
        return {"bytes_in_use": 3 << 20, "peak_bytes_in_use": 7 << 20}


def test_the_gpu_allocator_is_read_from_each_backends_own_statistics(monkeypatch):
    """What the GPU probe reads on jax and torch (their device memory statistics), on fakes of both: no GPU here."""
    import types

    from kerasbench import gpu

    torch = types.SimpleNamespace(cuda=_FakeTorchCuda())
    jax = types.SimpleNamespace(devices=lambda kind: [_FakeJaxDevice()] if kind == "gpu" else [])
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "jax", jax)
    monkeypatch.delenv(gpu.TEST_HOOK, raising=False)
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    reader = gpu.GpuMemoryReader(reserved=lambda: (11 << 20, "process"))
    assert reader.read() == {"alloc": 5 << 20, "reserved": 11 << 20} and reader.peak() == 9 << 20
    reader.reset()  # torch's peak starts again from what is in use
    assert reader.peak() == 5 << 20
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    assert reader.read()["alloc"] == 3 << 20 and reader.peak() == 7 << 20
    reader.reset()  # JAX keeps the process's peak: nothing to reset, nothing fails
    assert reader.peak() == 7 << 20
    torch.cuda.is_available = lambda: False
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    assert reader.read()["alloc"] is None and reader.peak() is None  # no GPU: n/a, not 0


SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".ci", "gpu-backends")


def test_the_gpu_machines_script_prepares_its_wheels_and_runs_offline_on_cpu(tmp_path):
    """The script a GPU machine without TensorFlow, Keras or network runs (docs/backends.md), run here on CPU
    (KERASBENCH_GPU_DEVICE=cpu): its wheels fit in 64 MiB and install without the index, every backend's records
    come back, ok where the framework is installed, else skipped saying what to install."""
    pytest.importorskip("pip")
    env = {**os.environ, "PYTHON": sys.executable, "KERASBENCH_GPU_DEVICE": "cpu", "KERASBENCH_GPU_LOOPS": "inference",
           "KERASBENCH_NO_CALIBRATE": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    prepared = subprocess.run([SCRIPT, "prepare", str(tmp_path / "d")], capture_output=True, text=True, env=env,
                              timeout=600)
    if prepared.returncode and "pip download" not in prepared.stderr and "HTTP" in prepared.stderr:
        pytest.skip(f"the package index is not reachable here: {prepared.stderr.strip().splitlines()[-1]}")
    assert prepared.returncode == 0, prepared.stderr
    assert "wheels" in prepared.stdout and sum(f.stat().st_size for f in (tmp_path / "d" / "wheels").iterdir()) \
        <= 64 * 1024 * 1024
    ran = subprocess.run([SCRIPT, "run", str(tmp_path / "d"), str(tmp_path / "out")], capture_output=True,
                         text=True, env={**env, "PIP_NO_INDEX": "1"}, timeout=1200)
    everything = all(__import__("importlib").util.find_spec(b) is not None for b in ("jax", "torch"))
    assert ran.returncode == (0 if everything else 4), ran.stderr  # 4: a backend measured nothing (not installed)
    assert "python" in (tmp_path / "out" / "machine.txt").read_text()
    for backend in ("jax", "torch"):
        assert f"gpu-backends: {backend} on cpu: rc 0" in ran.stdout, ran.stdout
        records = json.loads((tmp_path / "out" / f"{backend}-cpu.json").read_text())["records"]
        assert records and {r["loop"] for r in records} == {"inference"}
        installed = __import__("importlib").util.find_spec(backend) is not None
        for r in records:
            if installed:
                assert r["status"] == "ok" and r["environment"]["keras_backend"] == backend
            else:
                assert r["status"] == "skipped" and f"needs {backend} installed" in r["repeats"][0]["reason"]


def test_whose_growth_it_is_follows_from_each_backends_verdict():
    from kerasbench.attribute import backends_conclusion

    every = backends_conclusion({"tensorflow": ("grows", "leak"), "jax": ("grows", "leak"), "torch": ("grows", "")})
    assert every.startswith("The growth follows Keras: it grows on every backend measured (tensorflow, jax and torch)")
    one = backends_conclusion({"tensorflow": ("grows", "leak"), "jax": ("flat", ""), "torch": ("flat", "")})
    assert one.startswith("Only on tensorflow: flat on jax and torch") and "that backend's (or" in one
    two = backends_conclusion({"tensorflow": ("grows", "leak"), "jax": ("grows", ""), "torch": ("flat", "")})
    assert two.startswith("Only on tensorflow and jax: flat on torch") and "those backends' (or" in two
    assert backends_conclusion({"jax": ("flat", ""), "torch": ("flat", "")}).startswith("No growth on any backend")
    undecided = backends_conclusion({"tensorflow": ("grows", "leak"), "jax": ("inconclusive", ""),
                                     "torch": ("flat", "")})
    assert undecided.startswith("Not decided: jax is inconclusive (tensorflow grows; torch flat)")


def _fake_record(spec, verdict, heap):
    from kerasbench.rule import spec_floors
    from kerasbench.summary import make_record

    record = make_record(spec, [{"repeat": 0, "status": "skipped", "reason": "fake", "result": None,
                                 "environment": _env(spec.backend)}], spec_floors(spec))
    record["status"] = "ok"
    record["summary"].update(verdict=verdict, heap_verdict=heap, growth_per_iter=2048.0, growth_ci_low=1024.0,
                             growth_ci_high=3072.0, measured=[40])
    return record


def test_attribute_backends_measures_the_pair_on_each_and_answers(monkeypatch, tmp_path):
    import io

    from kerasbench import cli, runner

    seen = []

    def fake(specs, jobs, progress=None, finished=None, metric=""):
        seen.extend((s.backend, s.loop, s.strategy) for s in specs)
        return [_fake_record(s, "grows" if s.backend == "torch" else "flat", "flat") for s in specs]

    monkeypatch.setattr(runner, "measure_specs", fake)
    out = io.StringIO()
    assert cli.main(["attribute", "--backends", "tensorflow,jax,torch", "--loop", "sweep", "--strategy",
                     "clear_session_del_gc", "--json", str(tmp_path / "a.json")], out=out) == 0
    assert seen == [(b, "sweep", "clear_session_del_gc") for b in ("tensorflow", "jax", "torch")]
    text = out.getvalue()
    assert "Answer: Only on torch: flat on tensorflow and jax" in text
    assert "grows +2.0 [+1.0, +3.0]" in text  # torch's RSS verdict with its slope and CI
    assert "[40]" not in text and " 40 " in text  # its iterations
    saved = json.loads((tmp_path / "a.json").read_text())
    assert saved["attribution"]["backends"] == ["tensorflow", "jax", "torch"] and len(saved["records"]) == 3


def test_attribute_backends_in_a_release_s_environments_measures_each_where_its_column_was(monkeypatch, tmp_path):
    """--tf V: each backend in V's asv environment with its framework (the atlas' 2.21.0 and 2.21.0+jax columns'),
    as `run --tf V --backend B` would make it, not in this interpreter (which may have neither jax nor torch)."""
    import io

    from kerasbench import cli, environment, runner

    made, seen = [], []

    def python_for_tf(config, version, progress=None, python=None, pins=None, keras="", backend=""):
        made.append((version, python, backend))
        path = tmp_path / f"{version}-{backend or 'tf'}"  # an interpreter the spec accepts
        if not path.exists():
            path.symlink_to(sys.executable)
        return str(path)

    def fake(specs, jobs, progress=None, finished=None, metric=""):
        seen.extend((s.backend, s.python) for s in specs)
        return [_fake_record(s, "grows" if s.backend == "tensorflow" else "flat", "flat") for s in specs]

    monkeypatch.setattr(environment, "python_for_tf", python_for_tf)
    monkeypatch.setattr(runner, "measure_specs", fake)
    out = io.StringIO()
    assert cli.main(["attribute", "--backends", "tensorflow,jax", "--tf", "2.21.0", "--loop", "sweep", "--strategy",
                     "clear_session_del_gc", "--config", "asv.matrix.json"], out=out) == 0
    assert made == [("2.21.0", None, ""), ("2.21.0", None, "jax")]
    assert seen == [("tensorflow", str(tmp_path / "2.21.0-tf")), ("jax", str(tmp_path / "2.21.0-jax"))]
    text = out.getvalue()
    assert "on 2 Keras backends in TF 2.21.0's environments" in text and "Answer: Only on tensorflow" in text


@pytest.mark.parametrize("argv, message", [
    (["--tf", "2.21.0", "--good", "2.12.1", "--bad", "2.13.1"], "--tf goes with --backends"),
    (["--backends", "jax,torch", "--python", "3.12"], "give --tf VERSION too"),
    (["--backends", "jax"], "Expected two or more of tensorflow, jax, torch"),
    (["--backends", "jax,mxnet"], "Received: 'jax,mxnet'"),
    (["--backends", "jax,torch", "--good", "2.12.1"], "leave out --good and --bad"),
    ([], "Give --good and --bad (two releases or environments), or --backends A,B."),
])
def test_attribute_backends_bad_input_is_one_line(argv, message, capsys):
    from kerasbench import cli

    assert cli.main(["attribute", "--loop", "sweep", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_triage_bisects_keras_at_one_backend():
    """`triage --package keras --tf 2.21.0 --backend jax`: each Keras release's environment has the framework too."""
    from kerasbench.commands.triage import run_options, version_pins

    matrix = os.path.join(os.path.dirname(SCRIPT), "..", "asv.matrix.json")
    pins = version_pins(matrix, "3.10.0", tf="2.21.0", backend="jax")
    assert pins["keras"] == "3.10.0" and pins["jax"] == "0.10.2" and pins["tensorflow-cpu"] == "2.21.0"
    assert "torch" in version_pins(matrix, "3.10.0", tf="2.21.0", backend="torch")
    assert "jax" not in version_pins(matrix, "3.10.0", tf="2.21.0")
    assert run_options("3.10.0", tf="2.21.0") == ["--tf", "2.21.0", "--keras", "3.10.0"]


def test_a_backend_run_s_controls_are_that_backend_s_side(tmp_path):
    """The control loop imports neither TF nor Keras: in an asv environment of the torch backend its records are
    2.21.0+torch's, as the run's other loops are, not a duplicate of the TF environment's controls beside it."""
    from kerasbench.record import records_payload
    from kerasbench.rule import spec_floors
    from kerasbench.summary import make_record

    def write(folder, loop, strategy, env):
        spec = RunSpec(loop=loop, strategy=strategy, iterations=4, warmup=0).validate()
        repeat = {"repeat": 0, "status": "skipped", "reason": "test", "result": None, "environment": env}
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{loop}.json").write_text(json.dumps(records_payload([make_record(spec, [repeat],
                                                                                    spec_floors(spec))])))

    bare = {"python": "3.11.7", "tensorflow": None, "keras": None}  # what a control's worker records
    for name, backend in (("virtualenv-py3.11-keras3.13.2-tensorflow-cpu2.21.0", "tensorflow"),
                          ("virtualenv-py3.11-keras3.13.2-tensorflow-cpu2.21.0-torch2.13.0-KERAS_BACKENDtorch",
                           "torch")):
        folder = tmp_path / "atlas-vm" / f"d6bdaf1f-{name}"
        write(folder, "inference", "reuse_model", _env(backend, "2.21.0"))
        write(folder, "control", "control_noop", dict(bare))
    labels = sorted((record["loop"], version) for record, _, version in loading.load_records([str(tmp_path)]))
    assert labels == [("control", "2.21.0"), ("control", "2.21.0+torch"),
                      ("inference", "2.21.0"), ("inference", "2.21.0+torch")]


def _grows(slope_kib, half_kib):
    """An ok record whose RSS grows `slope_kib` KiB/iteration, its 95 % CI ± `half_kib` (the summary a slope's compare
    rule reads)."""
    kib = 1024
    return {"status": "ok", "summary": {"verdict": "grows", "heap_verdict": "grows", "growth_kind": "leak",
                                        "growth_per_iter": slope_kib * kib,
                                        "growth_ci_low": (slope_kib - half_kib) * kib,
                                        "growth_ci_high": (slope_kib + half_kib) * kib, "floor": 32 * kib}}


def test_growth_on_every_backend_says_whether_at_one_size():
    """Every backend grows, so the growth is Keras's: and where the atlas marks tensorflow +5,001 against torch +126
    KiB/iteration (sweep × rebuild_no_clear, TF 2.21.0), the answer says the size is the backend's, not only 'grows on
    every backend'; one size within the floor says so; CIs too wide say they cannot tell."""
    from kerasbench.attribute import backends_conclusion

    both = {"tensorflow": ("grows", "leak"), "torch": ("grows", "leak")}
    apart = backends_conclusion(both, {"tensorflow": _grows(5001, 700), "torch": _grows(126, 3)})
    assert apart.startswith("The growth follows Keras: it grows on every backend measured (tensorflow and torch)")
    assert "but not at one size (tensorflow +5,001.0, torch +126.0 KiB/iteration: torch ×0.0252 of tensorflow's" \
        in apart and apart.endswith("so the size is the backend's."), apart
    alike = backends_conclusion(both, {"tensorflow": _grows(3650, 10), "torch": _grows(3660, 10)})
    assert alike.endswith(", at one size (tensorflow +3,650.0, torch +3,660.0 KiB/iteration, within the floor)."), alike
    wide = backends_conclusion(both, {"tensorflow": _grows(500, 450), "torch": _grows(200, 150)})
    assert "their sizes not decided" in wide, wide
    assert backends_conclusion(both) == backends_conclusion(both, {})  # no records: the verdicts alone, as before
    assert "heap" not in apart  # both grow in RSS: nothing more to say


def test_a_backend_growing_in_its_heap_only_is_named_beside_its_rss_slope():
    """torch's inference × rebuild_no_clear (atlas, TF 2.21.0): RSS +0.2 KiB/iteration, flat, the heap growing. Its RSS
    slope beside tensorflow's is not the size of what grows: the sentence says its RSS is flat and its heap grows."""
    from kerasbench.attribute import backends_conclusion

    both = {"tensorflow": ("grows", "leak"), "torch": ("grows", "leak")}
    torch = _grows(0.2, 0.5)
    torch["summary"].update(verdict="flat", heap_growth_per_iter=12.5 * 1024)
    said = backends_conclusion(both, {"tensorflow": _grows(530, 20), "torch": torch})
    assert "torch ×0.000377 of tensorflow's" in said, said
    assert said.endswith("so the size is the backend's (torch's RSS flat, its heap growing +12.5 KiB/iteration).")
