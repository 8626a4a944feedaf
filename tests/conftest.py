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
