import importlib.util

import pytest

HAVE_TF = importlib.util.find_spec("tensorflow") is not None


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="TensorFlow is not installed: pip install -e '.[cpu]'")
    for item in items:
        if "tf" in item.keywords and not HAVE_TF:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_stored_calibration(tmp_path_factory, monkeypatch):
    """Every test starts with an empty calibration folder: this machine's stored floors must not leak in."""
    monkeypatch.setenv("KERASBENCH_CALIBRATION", str(tmp_path_factory.mktemp("calibration")))
    monkeypatch.delenv("KERASBENCH_ALLOCATOR", raising=False)


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
    subprocess.run(["git", "checkout", "-q", "-B", "main"], cwd=repo, check=True)  # asv.conf.json's branch, from any branch
    return work, repo
