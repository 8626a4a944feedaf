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
