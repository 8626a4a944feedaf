"""The Keras and Python axes in the asv matrix: entries kerasbench derives the same way, named as asv names them."""

import json
import pathlib
import shlex

import pytest

from kerasbench import asvconf, environment, install, releases
from kerasbench.errors import UsageError
from test_releases import older_index  # noqa: F401  (a fixture: TF 2.8-2.11's wheels added to the index)

pytest.importorskip("asv")

ROOT = pathlib.Path(__file__).resolve().parent.parent
MATRIX = str(ROOT / "asv.matrix.json")
PYPI = str(ROOT / "tests" / "fixtures" / "pypi")  # real simple-API answers (tf-keras's too), trimmed


@pytest.fixture(autouse=True)
def offline_index(monkeypatch):
    monkeypatch.setenv("KERASBENCH_PYPI", PYPI)


def axis_entries():
    every = asvconf.read_config(MATRIX)["include"]
    home = releases.config_python(every)
    return [(asvconf.axis_of(e, home), e) for e in every if asvconf.axis_of(e, home)]


def test_the_matrix_has_a_keras_and_a_python_axis_besides_one_entry_per_release():
    axes = sorted(axis for axis, _ in axis_entries())
    assert axes == ["jax", *["py3.10"] * 5, "py3.12", "py3.12", "py3.13", "tf_keras", "tf_keras", "torch"]
    tfs = [e["req"]["tensorflow-cpu"] for e in asvconf.includes(MATRIX)]
    assert len(tfs) == len(set(tfs)) == 10  # triage and `run --tf` see one entry per release


@pytest.mark.parametrize("axis, entry", axis_entries(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_axis_entry_is_what_run_derives_for_it(axis, entry, request):
    """`run --tf V --keras tf_keras` / `--python X.Y` pin exactly the entry: one environment, not two."""
    tf = entry["req"]["tensorflow-cpu"]
    if releases.version_key(tf)[:2] in releases.OLDER_MINORS:  # TF 2.8-2.11: their wheels and Keras in the index
        request.getfixturevalue("older_index")
    python = entry["python"] if axis.startswith("py") else None
    backend = axis if axis in asvconf.BACKEND_PINS else ""
    reqs, no_deps = environment.requirements_with(MATRIX, tf, python, keras="tf_keras" if axis == "tf_keras" else "",
                                                  backend=backend)
    assert reqs == entry["req"]
    if backend:  # Keras 3 on jax or torch: the release's entry and the framework, KERAS_BACKEND set
        assert entry["env"] == {asvconf.BACKEND_VAR: backend} and not no_deps
        assert releases.version_key(tf)[:2] >= (2, 16)
        _, env = environment.environment_for(MATRIX, reqs)
        assert env._tagged_env_vars == {("build", asvconf.BACKEND_VAR): backend}
    elif axis == "tf_keras":
        assert entry["env"] == {asvconf.LEGACY_KERAS_VAR: "1"} and no_deps == [asvconf.TF_KERAS_PIN]
        assert releases.version_key(tf)[:2] >= (2, 16)
    else:
        assert "env" not in entry and not no_deps
        releases.check_python("tensorflow-cpu", tf, entry["python"])  # the release has a wheel for that Python


def test_asvs_own_pip_installs_tf_keras_without_its_tensorflow_requirement():
    """asv hands a pip+ value to pip as it is: --no-deps, so the `tensorflow` wheel never lands over tensorflow-cpu."""
    from asv.util import ParsedPipDeclaration, construct_pip_call

    for axis, entry in axis_entries():
        if axis != "tf_keras":
            continue
        key, value = asvconf.TF_KERAS_PIN, entry["req"][asvconf.TF_KERAS_PIN]
        call = construct_pip_call(lambda args: args, ParsedPipDeclaration(f"{key[4:]} {value}"))()
        assert "--no-deps" in call and f"tf-keras=={value.split()[-1]}" in call


def test_pins_read_the_flags_and_the_pip_prefix():
    assert asvconf.split_pin("pip+tf-keras", "--no-deps 2.21.0") == ("tf-keras", "2.21.0", ["--no-deps"])
    assert asvconf.split_pin("keras", "3.13.2") == ("keras", "3.13.2", [])
    assert asvconf.split_pin("pip+tf_keras", "--no-deps ==2.16.0")[:2] == ("tf_keras", "2.16.0")
    assert asvconf.package_of("pip+TF_Keras") == "tf-keras"
    assert install._pins({"tensorflow-cpu": "2.21.0", "pip+tf-keras": "--no-deps 2.21.0"}) == \
        ["tensorflow-cpu==2.21.0", "tf-keras==2.21.0"]


def test_matrix_entries_are_named_as_asv_names_them_without_their_pythons(monkeypatch):
    """Listed on a machine without Python 3.10/3.12/3.13 (a CI planner) with the names asv gives where it has them."""
    from asv import environment

    listed = asvconf.matrix_entries(MATRIX)
    assert len(listed) == 22 and len({e["name"] for e in listed}) == 22
    found = {env.name for env in environment.get_environments(asvconf.load_config(MATRIX), None, verbose=False)}
    assert found <= {e["name"] for e in listed}  # whatever Pythons this machine has, the same names
    assert any("TF_USE_LEGACY_KERAS1" in e["name"] and "--no-deps" in e["name"] for e in listed)

    from asv.plugins import virtualenv

    monkeypatch.setattr(virtualenv.Virtualenv, "_find_python", staticmethod(lambda python: None))
    assert [e["name"] for e in asvconf.matrix_entries(MATRIX)] == [e["name"] for e in listed]


def test_the_fan_out_plan_labels_each_axis_entry_apart(capsys):
    from kerasbench.cli import main

    assert main(["envs", "--json", "--config", MATRIX]) == 0
    jobs = json.loads(capsys.readouterr().out)["include"]
    labels = [job["label"] for job in jobs]
    assert len(labels) == len(set(labels)) == 22  # artifact names: one per job
    assert {"2.16.2+tf_keras", "2.21.0+tf_keras", "2.16.2+py3.10", "2.21.0+py3.13", "2.12.1", "2.21.0+jax",
            "2.21.0+torch", "2.8.4+py3.10", "2.11.1+py3.10"} <= set(labels)
    legacy = [job for job in jobs if job["axis"] == "tf_keras"]
    assert {job["keras_package"] for job in legacy} == {"tf_keras"} and all(job["python"] == "3.11" for job in legacy)


def test_envs_lists_the_axis_entries_with_their_pins(capsys):
    from kerasbench.cli import main

    assert main(["envs", "--config", MATRIX]) == 0
    out = capsys.readouterr().out
    assert "tf-keras==2.21.0 (--no-deps)" in out and "TF_USE_LEGACY_KERAS=1" in out
    assert "py3.13" in out


def test_a_tf_keras_environment_is_the_matrix_entrys_folder(tmp_path, monkeypatch):
    """kerasbench creates `run --tf 2.21.0 --keras tf_keras`'s environment where `asv run -E <entry>` finds it."""
    reqs, _ = environment.requirements_with(MATRIX, "2.21.0", keras="tf_keras")
    _, env = environment.environment_for(MATRIX, reqs)
    entry = next(e for e in asvconf.matrix_entries(MATRIX) if e["axis"] == "tf_keras" and
                 e["req"]["tensorflow-cpu"] == "2.21.0")
    assert env.name == entry["name"] and env._tagged_env_vars == {("build", asvconf.LEGACY_KERAS_VAR): "1"}
    assert shlex.split(f'asv run -E "{env.name}"')[-1] == env.name  # one argument, quoted as the workflow does


def test_a_backend_needs_keras_3_and_the_configs_backend_entry(tmp_path):
    with pytest.raises(UsageError, match=r"The jax backend is Keras 3's; TF 2.15.1 with its Keras is Keras 2"):
        environment.requirements_with(MATRIX, "2.15.1", backend="jax")
    bare = tmp_path / "asv.bare.json"
    config = asvconf.read_config(MATRIX)
    config["include"] = [e for e in config["include"] if asvconf.BACKEND_VAR not in (e.get("env") or {})]
    bare.write_text(json.dumps(config))
    with pytest.raises(UsageError, match=r"has no matrix entry for Keras' torch backend"):
        environment.requirements_with(str(bare), "2.21.0", backend="torch")
    reqs, _ = environment.requirements_with(MATRIX, "2.20.0", backend="jax")  # another release: the same framework
    assert reqs["jax"] == reqs["jaxlib"] == "0.10.2" and reqs["tensorflow-cpu"] == "2.20.0"


def test_compare_makes_one_side_per_python_of_a_release_measured_on_several(tmp_path):
    from kerasbench.compare import compare, group
    from kerasbench.loading import load_records
    from test_compare import synthetic

    paths = []
    for minor, slope in (("3.10", 0), ("3.11", 0), ("3.12", 1 << 20)):  # 1 MiB/iteration on 3.12
        payload = synthetic("2.16.2", slope, seed=int(minor[2:]))
        for record in payload["records"]:
            record["environment"]["python"] = f"{minor}.4"
        paths.append(tmp_path / f"py{minor}.json")
        paths[-1].write_text(json.dumps(payload))
    other = synthetic("2.21.0", 0, seed=5)  # one Python only: its plain name
    (tmp_path / "other.json").write_text(json.dumps(other))
    loaded = load_records([str(p) for p in paths] + [str(tmp_path / "other.json")])
    assert sorted({version for _, _, version in loaded}) == \
        ["2.16.2+py3.10", "2.16.2+py3.11", "2.16.2+py3.12", "2.21.0"]
    cells = compare(group(loaded), baseline="2.16.2+py3.11")
    growth = {c["version"]: c["verdict"] for c in cells if c["metric"] == "growth_per_iter"}
    assert growth["2.16.2+py3.12"] == "regressed" and growth["2.16.2+py3.10"] == "unchanged"


def test_attributes_reproduce_command_makes_a_tf_keras_environment_with_keras_tf_keras():
    from kerasbench.commands import attribute

    reqs, _ = environment.requirements_with(MATRIX, "2.21.0", keras="tf_keras")
    assert attribute.reproduce_args(MATRIX, reqs) == ["--tf", "2.21.0", "--keras", "tf_keras"]
    reqs["numpy"] = "2.3.0"
    assert "--pin=numpy==2.3.0" in attribute.reproduce_args(MATRIX, reqs)


def test_a_records_tree_keeps_each_axis_entry_a_side_of_its_own_skipped_pairs_too(tmp_path):
    """An asv run of the tf_keras entry and of a py3.13 entry of one release: skipped pairs (GPU strategies on a
    CPU machine) carry no environment; they belong to their run's side, not to a bare '2.21.0' both runs share."""
    import copy

    from kerasbench.compare import group
    from kerasbench.loading import load_records
    from test_compare import synthetic

    runs = {"virtualenv-py3.11-keras3.13.2-pip+tf-keras--no-deps 2.21.0-tensorflow-cpu2.21.0-TF_USE_LEGACY_KERAS1":
            ("3.11.7", "tf_keras"),
            "virtualenv-py3.13-keras3.13.2-tensorflow-cpu2.21.0": ("3.13.0", "keras"),
            "virtualenv-py3.11-keras3.13.2-tensorflow-cpu2.21.0": ("3.11.7", "keras")}
    for env_name, (python, package) in runs.items():
        payload = synthetic("2.21.0", 0)
        ok = payload["records"][0]
        ok["environment"].update(python=python, keras_package=package)
        skipped = copy.deepcopy(ok)
        skipped.update(strategy="gpu_growth_on", status="skipped", repeats=[])
        skipped.pop("environment")
        payload["records"].append(skipped)
        folder = tmp_path / "records" / "vm" / f"0123abcd-{env_name}"
        folder.mkdir(parents=True)
        (folder / "inference.json").write_text(json.dumps(payload))
    loaded = load_records([str(tmp_path / "records" / "vm")])
    sides = {version: sorted(r["strategy"] for r, _, v in loaded if v == version) for _, _, version in loaded}
    assert set(sides) == {"2.21.0+tf_keras", "2.21.0+py3.11", "2.21.0+py3.13"}
    assert all(len(strategies) == 2 and "gpu_growth_on" in strategies for strategies in sides.values())
    group(loaded)  # no "duplicate record": each skipped pair has its run's side


def test_compare_of_one_release_run_on_several_pythons_names_the_pythons_not_the_files(tmp_path, capsys):
    """`run --tf 2.16.2 --python X.Y --json` files, one per Python: sides 2.16.2+py3.10 …, not +<file name>."""
    from kerasbench.cli import main
    from test_compare import synthetic

    paths = []
    for minor in ("3.10", "3.11"):
        payload = synthetic("2.16.2", 0, seed=int(minor[2:]))
        payload["records"][0]["environment"]["python"] = f"{minor}.9"
        paths.append(str(tmp_path / f"run-{minor}.json"))
        pathlib.Path(paths[-1]).write_text(json.dumps(payload))
    assert main(["compare", *paths, "--baseline", "2.16.2+py3.11", "--format", "json"]) == 0
    cells = json.loads(capsys.readouterr().out)["cells"]
    assert {(c["baseline"], c["version"]) for c in cells} == {("2.16.2+py3.11", "2.16.2+py3.10")}
    same = synthetic("2.16.2", 0, seed=3)  # the same release, Python and pair twice: a before/after, by file
    pathlib.Path(tmp_path / "again.json").write_text(json.dumps(same))
    pathlib.Path(tmp_path / "again2.json").write_text(json.dumps(same))
    assert main(["compare", str(tmp_path / "again.json"), str(tmp_path / "again2.json"), "--format", "json"]) == 0
    versions = {c["version"] for c in json.loads(capsys.readouterr().out)["cells"]}
    assert versions == {"2.16.2+again2"}
