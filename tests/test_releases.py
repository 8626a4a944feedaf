"""kerasbench.releases: releases and wheel tags read through `packaging` from the simple API's JSON (fixtures)."""

import json
import pathlib

import pytest

from kerasbench import asvconf, releases
from kerasbench.errors import UsageError

ROOT = pathlib.Path(__file__).resolve().parent.parent
PYPI = ROOT / "tests" / "fixtures" / "pypi"  # real simple-API answers (PEP 691/700), trimmed to Linux x86-64 wheels
MATRIX = str(ROOT / "asv.matrix.json")


@pytest.fixture(autouse=True)
def offline_index(monkeypatch):
    monkeypatch.setenv("KERASBENCH_PYPI", str(PYPI))


def doc(files):
    return {"meta": {"api-version": "1.1"}, "name": "x", "files": files}


def wheel(name, when="2024-01-01T00:00:00Z", yanked=False, requires=None):
    return {"filename": name, "upload-time": when, "yanked": yanked, "requires-python": requires}


def test_wheel_tags_decide_the_python_not_a_filename_pattern():
    d = doc([wheel("tensorflow_cpu-2.9.0-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"),
             wheel("tensorflow_cpu-2.9.1-cp311-cp311-manylinux_2_17_x86_64.whl"),
             wheel("tensorflow_cpu-2.9.2-cp311-cp311-macosx_10_15_x86_64.whl"),  # not this platform
             wheel("tensorflow_cpu-2.9.3-cp311-cp311-win_amd64.whl"),
             wheel("tensorflow_cpu-2.9.4rc0-cp311-cp311-manylinux_2_17_x86_64.whl"),  # not final
             wheel("tensorflow_cpu-2.9.5.post1-cp311-cp311-manylinux_2_17_x86_64.whl"),
             wheel("tensorflow_cpu-2.9.6-cp311-cp311-manylinux_2_17_x86_64.whl", yanked=True),
             wheel("tensorflow_cpu-2.9.7-cp311-abi3-manylinux_2_17_x86_64.whl"),  # stable ABI: 3.11 and later
             {"filename": "tensorflow_cpu-2.9.8.tar.gz", "upload-time": "2024-01-01T00:00:00Z"}])
    assert set(releases.installable(d, "3.11")) == {"2.9.1", "2.9.7"}
    assert set(releases.installable(d, "3.12")) == {"2.9.7"}
    assert set(releases.installable(d, "3.10")) == {"2.9.0"}


def test_requires_python_of_a_pure_wheel_is_respected():
    d = doc([wheel("keras-3.13.2-py3-none-any.whl", requires=">=3.11"), wheel("keras-3.4.1-py3-none-any.whl")])
    assert set(releases.installable(d, "3.10")) == {"3.4.1"}
    assert set(releases.installable(d, "3.12")) == {"3.4.1", "3.13.2"}


def test_first_upload_time_of_a_version_is_kept():
    d = doc([wheel("numpy-1.0.0-cp311-cp311-manylinux_2_17_x86_64.whl", "2024-02-01T00:00:00Z"),
             wheel("numpy-1.0.0-py3-none-any.whl", "2024-01-01T00:00:00Z")])
    assert releases.installable(d, "3.11") == {"1.0.0": "2024-01-01T00:00:00Z"}


def test_the_pythons_of_a_release_from_the_real_index():
    tf = releases.index("tensorflow-cpu")
    assert releases.pythons_for(tf, "2.12.1") == ["3.8", "3.9", "3.10", "3.11"]
    assert releases.pythons_for(tf, "2.16.2") == ["3.9", "3.10", "3.11", "3.12"]
    assert "3.13" in releases.pythons_for(tf, "2.21.0") and "3.9" not in releases.pythons_for(tf, "2.21.0")


def test_another_python_keeps_tf_and_keras_and_moves_numpy_or_scipy_only_where_needed():
    includes = asvconf.includes(MATRIX)
    home = releases.requirements_for("2.16.2", includes)
    on_310 = releases.requirements_for("2.16.2", includes, python="3.10")
    assert on_310["tensorflow-cpu"] == "2.16.2" and on_310["keras"] == home["keras"] == "3.4.1"
    assert on_310["numpy"] == home["numpy"]  # numpy 1.26.4 has a cp310 wheel
    # scipy 1.17.1 requires Python 3.11: the newest earlier scipy with a 3.10 wheel
    assert releases.version_key(on_310["scipy"]) < releases.version_key(home["scipy"])
    assert on_310["scipy"] in releases.installable(releases.index("scipy"), "3.10")
    assert releases.requirements_for("2.16.2", includes, python="3.12")["numpy"] == "1.26.4"


def test_a_release_without_a_wheel_for_that_python_names_the_pythons_it_has():
    includes = asvconf.includes(MATRIX)
    with pytest.raises(UsageError, match=r"tensorflow-cpu 2\.12\.1 has no wheel for Python 3\.12 .*"
                                         r"it has: 3\.8, 3\.9, 3\.10, 3\.11\."):
        releases.requirements_for("2.12.1", includes, python="3.12")
    with pytest.raises(UsageError, match=r"keras 3\.13\.2 has no wheel for Python 3\.10"):
        releases.requirements_for("2.21.0", includes, python="3.10")
    with pytest.raises(UsageError, match="Expected MAJOR.MINOR"):
        releases.requirements_for("2.21.0", includes, python="three")


def test_patch_releases_on_another_python():
    includes = asvconf.includes(MATRIX)
    assert "2.12.0" in releases.candidates("2.12.0", "2.13.1", includes, python="3.8")
    with pytest.raises(UsageError, match="Unknown TF version"):  # no 2.12 wheel for Python 3.12
        releases.candidates("2.12.1", "2.16.2", includes, python="3.12")


def test_the_fixtures_are_simple_api_answers_without_the_deprecated_releases_key():
    for path in PYPI.glob("*.json"):
        answer = json.loads(path.read_text())
        assert "releases" not in answer and answer["meta"]["api-version"].startswith("1.")
        assert all("upload-time" in f for f in answer["files"])


# ---------------------------------------------------------------- releases before 2.12 (TF 2.8 to 2.11, Python 3.10)

WHEEL_TAIL = "manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
OLDER_TF = {  # real filenames and upload times of tensorflow-cpu's last patches before 2.12 (wheels up to cp310)
    "2.8.4": ("2022-11-16T18:55:09Z", "manylinux2010_x86_64.whl", None),
    "2.9.0": ("2022-05-16T20:36:33Z", WHEEL_TAIL, ">=3.7"),
    "2.9.3": ("2022-11-16T19:35:49Z", WHEEL_TAIL, ">=3.7"),
    "2.10.1": ("2022-11-16T20:14:50Z", WHEEL_TAIL, ">=3.7"),
    "2.11.1": ("2023-03-20T19:29:19Z", WHEEL_TAIL, ">=3.7"),
}
OLDER_KERAS = {"2.8.0": "2022-01-31T19:00:05Z", "2.9.0": "2022-05-13T18:15:03Z", "2.10.0": "2022-09-02T21:28:37Z",
               "2.11.0": "2022-11-14T17:18:20Z"}


@pytest.fixture
def older_index(tmp_path, monkeypatch):
    """The fixture index plus TF 2.8-2.11's wheels (cp37-cp310), their Keras and numpy 1.23.5, as PyPI has them."""
    for path in PYPI.glob("*.json"):
        (tmp_path / path.name).write_text(path.read_text())

    def add(package, files):
        path = tmp_path / f"{package}.json"
        answer = json.loads(path.read_text())
        answer["files"] += files
        path.write_text(json.dumps(answer))

    add("tensorflow-cpu", [wheel(f"tensorflow_cpu-{v}-{cp}-{cp}{'m' if cp == 'cp37' else ''}-{tail}", when, requires=rp)
                           for v, (when, tail, rp) in OLDER_TF.items() for cp in ("cp37", "cp38", "cp39", "cp310")])
    add("keras", [wheel(f"keras-{v}-py2.py3-none-any.whl", when) for v, when in OLDER_KERAS.items()])
    add("numpy", [wheel(f"numpy-1.23.5-{cp}-{cp}-{WHEEL_TAIL}", "2022-11-20T01:22:30Z", requires=">=3.8")
                  for cp in ("cp38", "cp39", "cp310", "cp311")])
    (tmp_path / "protobuf.json").write_text(json.dumps(
        doc([wheel("protobuf-3.19.6-py2.py3-none-any.whl", "2022-09-29T22:08:11Z", requires=">=3.5")])))
    monkeypatch.setenv("KERASBENCH_PYPI", str(tmp_path))
    return tmp_path


def pins_before_2_12(tf, keras):
    """What TF 2.8-2.11 get on Python 3.10: the oldest matrix entry's scipy and asv_runner, numpy 1.23.5."""
    return {"tensorflow-cpu": tf, "keras": keras, "numpy": "1.23.5", "scipy": "1.15.3", "pip+asv_runner": "0.3.2"}


def test_2_9_3_on_python_3_10_is_a_release_with_its_own_keras_and_numpy_below_1_24(older_index):
    includes = asvconf.includes(MATRIX)
    assert releases.requirements_for("2.9.3", includes, python="3.10") == pins_before_2_12("2.9.3", "2.9.0")
    for tf, keras in (("2.8.4", "2.8.0"), ("2.10.1", "2.10.0"), ("2.11.1", "2.11.0")):  # the last patch of each
        assert releases.requirements_for(tf, includes, python="3.10") == pins_before_2_12(tf, keras)
    assert releases.older_minors(includes) == [(2, 8), (2, 9), (2, 10), (2, 11)]
    assert len(includes) == 10  # derived, as a patch release's pins are: the matrix and its entries unchanged
    # a patch release of an older minor: the same pins, its own TF and the Keras uploaded before it
    # and protobuf below 3.20, which every 2.8-2.11 wheel asks for but 2.8.0's, 2.8.1's and 2.9.0's (protobuf 4
    # cannot import them); the others, the matrix's entries among them, as they were
    assert releases.requirements_for("2.9.0", includes, python="3.10") == {**pins_before_2_12("2.9.0", "2.9.0"),
                                                                           "protobuf": "3.19.6"}
    # Python 3.9: scipy moves to the newest release with a 3.9 wheel, TF and Keras stay
    on_39 = releases.requirements_for("2.9.3", includes, python="3.9")
    assert on_39["tensorflow-cpu"] == "2.9.3" and on_39["keras"] == "2.9.0" and on_39["numpy"] == "1.23.5"
    assert releases.version_key(on_39["scipy"]) < (1, 15)


@pytest.mark.parametrize("python", [None, "3.11"])
def test_2_9_3_on_python_3_11_is_refused_with_the_python_to_use(older_index, python):
    includes = asvconf.includes(MATRIX)
    expected = (r"^tensorflow-cpu 2\.9\.3 has no wheel for Python 3\.11 on this platform; it has: 3\.8, 3\.9, "
                r"3\.10\. Give --python 3\.10 \(the newest it has\)\.$")
    with pytest.raises(UsageError, match=expected):
        releases.requirements_for("2.9.3", includes, python=python)
    with pytest.raises(UsageError, match=expected):  # triage's ends, too
        releases.candidates("2.9.3", "2.12.1", includes, python=python)


def test_run_and_triage_refuse_2_9_3_without_python_in_one_line(older_index, capsys):
    import io

    from kerasbench.cli import main

    for argv in (["run", "--config", MATRIX, "--tf", "2.9.3", "--loop", "sweep", "--iterations", "3"],
                 ["triage", "--config", MATRIX, "--good", "2.9.3", "--bad", "2.12.1", "--loop", "sweep"]):
        assert main(argv, out=io.StringIO()) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "2.9.3 has no wheel for Python 3.11" in err[0] and "Give --python 3.10" in err[0]


def test_triage_from_2_9_3_on_python_3_10_bisects_the_older_releases(older_index):
    includes = asvconf.includes(MATRIX)
    assert releases.candidates("2.9.3", "2.12.1", includes, python="3.10") == \
        ["2.9.3", "2.10.1", "2.11.1", "2.12.0", "2.12.1"]
    assert releases.candidates("2.12.1", "2.8.4", includes, patches=False, python="3.10") == \
        ["2.12.1", "2.11.1", "2.10.1", "2.9.3", "2.8.4"]
    with pytest.raises(UsageError, match=r"Unknown TF version\. Received: good='2\.9\.1'\. Expected one of: 2\.8\.4, "
                                         r"2\.9\.0, 2\.9\.3, 2\.10\.1"):  # not in this index
        releases.candidates("2.9.1", "2.12.1", includes, python="3.10")


def test_triage_command_from_2_9_3_makes_each_release_environment_on_python_3_10(older_index, monkeypatch):
    import io

    from kerasbench import environment, runner
    from kerasbench.cli import main
    from test_compare import synthetic

    made = {}

    def python_for(config, reqs, progress=None, python=None):
        made[reqs["tensorflow-cpu"]] = (python, dict(reqs))
        return f"python-{reqs['tensorflow-cpu']}", f"env-{reqs['tensorflow-cpu']}"

    def measure(spec, progress=None):
        version = spec.python.split("-", 1)[1]
        slope = 0 if releases.version_key(version) < (2, 11) else 400 * 1024
        return synthetic(version, slope, repeats=2, n=20, seed=len(made))["records"][0]

    monkeypatch.setattr(environment, "python_for", python_for)
    monkeypatch.setattr(runner, "measure", measure)
    out = io.StringIO()
    code = main(["triage", "--config", MATRIX, "--good", "2.9.3", "--bad", "2.12.1", "--python", "3.10", "--loop",
                 "sweep", "--strategy", "clear_session_del_gc", "--jobs", "1"], out=out)
    assert code == 0
    assert "Answer: TF 2.11.1" in out.getvalue() and "--tf 2.10.1" in out.getvalue()
    assert made["2.9.3"] == ("3.10", pins_before_2_12("2.9.3", "2.9.0"))
    assert all(python == "3.10" and pins["numpy"] == ("1.23.5" if releases.version_key(v) < (2, 12) else "1.24.3")
               for v, (python, pins) in made.items())


def test_a_release_before_2_8_names_what_there_is(older_index):
    with pytest.raises(UsageError, match=r"TF 2\.7\.0: no entry of its minor release in the asv config \(it has "
                                         r"2\.12\.1, .*, 2\.21\.0, and the patch releases of 2\.8 to 2\.11\)\."):
        releases.requirements_for("2.7.0", asvconf.includes(MATRIX), python="3.9")


def test_triage_of_pinned_releases_alone_does_not_read_the_index(monkeypatch):
    def offline(package):
        raise AssertionError(f"read the index of {package}")

    monkeypatch.setattr(releases, "index", offline)
    assert releases.candidates("2.12.1", "2.14.1", asvconf.includes(MATRIX), patches=False) == \
        ["2.12.1", "2.13.1", "2.14.1"]


# _compat on TF 2.8-2.10: tf.function traces through the defun Function of tensorflow.python.eager.function, and the
# graph-building time counter lives there too (TF 2.11 has 2.12's TracingCompiler). Faked: no TF imported.

NEWER_TRACING = ("tensorflow.python.eager.polymorphic_function.tracing_compilation",
                 "tensorflow.python.eager.polymorphic_function.tracing_compiler")


@pytest.fixture
def tf_2_9_internals(monkeypatch):
    """sys.modules as TF 2.9 lays them out (the newer tracing modules absent), with a fake defun Function."""
    import sys
    import types

    from kerasbench import _compat, counters

    for name in NEWER_TRACING:
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError, as on TF 2.9
    module = types.ModuleType("tensorflow.python.eager.function")

    class Function:  # the attributes TF 2.8-2.10's function.Function holds
        def __init__(self, python_function, name):
            self._python_function, self._name, self._function_cache = python_function, name, {}

        def _create_graph_function(self, args, kwargs, override_flat_arg_shapes=None):
            return ("concrete", args, kwargs)

    class Cell:
        def value(self):
            return 2_500_000  # microseconds

    module.Function = Function
    module._graph_building_time_counter = types.SimpleNamespace(get_cell=Cell)
    monkeypatch.setitem(sys.modules, "tensorflow.python.eager.function", module)
    monkeypatch.setattr(_compat, "tf", lambda: None)
    _compat._graph_building_counter.cache_clear()
    monkeypatch.setitem(counters._HOOK, "state", "not installed")
    for table in ("_GROUPS", "_LIVE"):
        monkeypatch.setattr(counters, table, {})
    monkeypatch.setattr(counters, "_RETIRED", [])
    yield module
    _compat._graph_building_counter.cache_clear()


def test_the_trace_hook_counts_tf_2_9_defun_traces(tf_2_9_internals):
    from kerasbench import _compat, counters

    original = tf_2_9_internals.Function._create_graph_function
    try:
        assert _compat.install_trace_hook() == "installed (function)"

        def train_function(iterator):
            return iterator

        fn = tf_2_9_internals.Function(train_function, "train_function")
        assert fn._create_graph_function((1,), {}) == ("concrete", (1,), {})  # what TF gets back is TF's
        fn._create_graph_function((2,), {}, None)
        assert counters.all_traces() == 2
        [group] = counters.functions()
        assert group["function"].endswith("train_function") and group["traces"] == 2
    finally:
        tf_2_9_internals.Function._create_graph_function = original


def test_graph_building_seconds_on_tf_2_9(tf_2_9_internals):
    from kerasbench import _compat

    assert _compat.graph_building_seconds() == 2.5


def test_envs_tf_2_9_3_names_the_python_3_10_environment_run_makes(older_index, config, monkeypatch):
    import os

    from kerasbench import environment

    monkeypatch.setenv("PATH", os.environ.get("PATH", ""))  # interpreter() may put pyenv's 3.10 on it
    try:
        environment.interpreter("3.10")
    except UsageError:
        pytest.skip("no Python 3.10 on this machine")
    [(name, reqs)] = environment.environments(config, "2.9.3")  # `kerasbench envs --tf 2.9.3`
    assert name == "virtualenv-py3.10-keras2.9.0-numpy1.23.5-scipy1.15.3-tensorflow-cpu2.9.3"
    pins = pins_before_2_12("2.9.3", "2.9.0")
    assert reqs == {k: v for k, v in pins.items() if k not in asvconf.ASV_BASE}  # asv names its runner apart
    assert environment.requirements_with(config, "2.9.3", "3.10") == (pins, [])  # what `run --tf` installs
    with pytest.raises(UsageError, match=r"or of 2\.8 to 2\.11\)\.$"):
        environment.environments(config, "2.7.0")
