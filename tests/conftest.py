import importlib.util

import pytest

HAVE_TF = importlib.util.find_spec("tensorflow") is not None


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="TensorFlow is not installed: pip install -e '.[cpu]'")
    for item in items:
        if "tf" in item.keywords and not HAVE_TF:
            item.add_marker(skip)
