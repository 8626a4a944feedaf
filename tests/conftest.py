import importlib.util
import os

import pytest

HAVE_TF = importlib.util.find_spec("tensorflow") is not None
# The asv suite writes each pair's outcome to the terminal (/dev/tty, kerasbench.console.console_stream): not from
# the asv runs of the tests (set before any fixture, so their asv subprocesses inherit it)
os.environ.setdefault("KERASBENCH_QUIET", "1")


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="TensorFlow is not installed: pip install -e '.[cpu]'")
    for item in items:
        if "tf" in item.keywords and not HAVE_TF:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_stored_calibration(tmp_path_factory, monkeypatch):
    """Every test starts with empty calibration folders and never calibrates on the fly (stored floors stay out)."""
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path_factory.mktemp("calibration")))
    # docs/calibration
    monkeypatch.setattr("kerasbench.calibration_store.SHIPPED", str(tmp_path_factory.mktemp("shipped")))
    monkeypatch.setenv("KERASBENCH_NO_CALIBRATE", "1")  # a run without a fitting calibration would calibrate (~1 min)
    monkeypatch.delenv("KERASBENCH_ALLOCATOR", raising=False)
    monkeypatch.delenv("KERAS_BACKEND", raising=False)  # Keras' backend is tensorflow unless a test says otherwise
    monkeypatch.setenv("KERASBENCH_MIN_FREE_GIB", "0")  # the machine's free disk is no test's input (its own tests
    # set it: tests/test_faults_lifecycle.py)


@pytest.fixture
def config(tmp_path):
    """A copy of asv.matrix.json whose environments live under tmp_path (tests that make environments)."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    text = (root / "asv.matrix.json").read_text().replace('".asv/env"', json.dumps(str(tmp_path / "env")))
    path = tmp_path / "asv.matrix.json"
    path.write_text(text)
    return str(path)


def clone_for_asv(tmp_path_factory, name):
    """(work folder, clone of this repository on branch main): where the asv tests run `asv run`."""
    import shutil
    import subprocess
    from pathlib import Path

    if shutil.which("asv") is None:
        pytest.skip("asv is not installed")
    work = tmp_path_factory.mktemp(name)
    repo = work / "repo"
    subprocess.run(["git", "clone", "-q", str(Path(__file__).resolve().parent.parent), str(repo)], check=True)
    # asv.conf.json's branch, from any branch
    subprocess.run(["git", "checkout", "-q", "-B", "main"], cwd=repo, check=True)
    return work, repo


@pytest.fixture(scope="session")
def record_validator():
    """A jsonschema validator of one record (kerasbench.record.json_schema), or None without jsonschema."""
    try:
        import jsonschema
    except ImportError:
        return None
    from kerasbench.record import json_schema

    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(autouse=True)
def _records_match_the_schema(record_validator, monkeypatch):
    """Every record built in this process (kerasbench.summary.make_record) is checked against the record schema."""
    if record_validator is None:
        return
    import json

    from kerasbench import summary

    make_record = summary.make_record

    def checked(spec, repeats, floors):
        built = make_record(spec, repeats, floors)
        record_validator.validate(json.loads(json.dumps(built)))  # as a records file holds it
        return built

    monkeypatch.setattr(summary, "make_record", checked)
