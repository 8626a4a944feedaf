"""kerasbench: what TensorFlow/Keras loops do to memory and tracing, per cleanup strategy and TF release.

Importing kerasbench never imports TensorFlow, and the registries import nothing heavy, so
that asv's many short benchmark processes start fast; the rest loads on first use.
"""

import importlib

__version__ = "0.1.0"

_EXPORTS = {  # public name: the module that defines it (imported on first use)
    "ALLOCATORS": "allocators",
    "CLEANUPS": "strategies",
    "STRATEGIES": "strategies",
    "get_strategy": "strategies",
    "strategies_for": "strategies",
    "LOOPS": "loops",
    "get_loop": "loops",
    "METRICS": "metrics",
    "PROFILES": "profiles",
    "get_profile": "profiles",
    "SCHEMA_VERSION": "record",
    "RunSpec": "runner",
    "measure": "api",
    "Results": "api",
    "testing": None,
    "fit_growth": "stats",
    "verdict": "rule.series",
    "Skip": "errors",
    "UsageError": "errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    if name in _EXPORTS:
        if _EXPORTS[name] is None:  # a submodule: kerasbench.testing
            return importlib.import_module(f".{name}", __name__)
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'kerasbench' has no attribute {name!r}")


def __dir__() -> list:
    return __all__
