"""The one module that knows TensorFlow and Keras versions apart (Keras 2 in TF <= 2.15, Keras 3 after;
tf_keras, the Keras 2 package, when TF >= 2.16 runs with TF_USE_LEGACY_KERAS=1: tf.keras is then tf_keras).

TensorFlow is imported on first use, never at import of kerasbench (nor of this module).
"""

from __future__ import annotations

import functools
import importlib
import os
from typing import Any, Callable, Iterable, Optional

from . import allocators, counters
from .errors import Skip


@functools.lru_cache(maxsize=None)
def tf() -> Any:
    """The tensorflow module, imported once (quietly) on first use; every tf.function trace is counted from then on
    (install_trace_hook)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow

    install_trace_hook()
    return tensorflow


# Where a tf.function trace makes its ConcreteFunction: the one call every trace of every tf.function goes through
# (Keras's train/predict wrappers, tf.data's functions, a user's), once per trace (a cache hit does not reach it).
# cond/while branches and gradient graphs are built elsewhere (func_graph_from_py_func): they are not traces.
_TRACE_ENTRY = (
    # TF >= 2.14: a module function, _create_concrete_function(function_type, type_context, func_graph, options)
    ("tensorflow.python.eager.polymorphic_function.tracing_compilation", None, "_create_concrete_function"),
    # TF 2.11 to 2.13: TracingCompiler._create_concrete_function(self, args, kwargs[, func_graph])
    ("tensorflow.python.eager.polymorphic_function.tracing_compiler", "TracingCompiler", "_create_concrete_function"),
    # TF 2.8 to 2.10: the defun Function a tf.function traces through, _create_graph_function(self, args, kwargs[,
    # override_flat_arg_shapes]); it holds _name, _python_function and _function_cache as TracingCompiler does
    ("tensorflow.python.eager.function", "Function", "_create_graph_function"),
)


def install_trace_hook() -> str:
    """Count every tf.function trace in this process (counters.trace_started/trace_ended); how it stands, also in
    counters.hook_state(). Installed once; where TF's internals differ it says so and counts nothing."""
    if counters.hook_state().startswith("installed"):
        return counters.hook_state()
    for module_name, owner, method in _TRACE_ENTRY:
        try:
            module = importlib.import_module(module_name)
            target = getattr(module, owner) if owner else module
            original = getattr(target, method)
        except (ImportError, AttributeError):
            continue
        if owner is None:
            def hooked(*args, _original=original, **kwargs):
                options = kwargs.get("tracing_options", args[-1] if args else None)
                entry = counters.trace_started(options.name, options.python_function, options.function_cache,
                                               options)
                made = None
                try:
                    made = _original(*args, **kwargs)
                    return made
                finally:
                    counters.trace_ended(entry, made)
        else:
            def hooked(self, *args, _original=original, **kwargs):
                entry = counters.trace_started(self._name, self._python_function, self._function_cache, self)
                made = None
                try:
                    made = _original(self, *args, **kwargs)
                    return made
                finally:
                    counters.trace_ended(entry, made)
        setattr(target, method, hooked)
        counters.set_hook(f"installed ({module_name.rsplit('.', 1)[-1]})")
        return counters.hook_state()
    counters.set_hook("unavailable: no tracing entry point known in this TF (kerasbench._compat._TRACE_ENTRY)")
    return counters.hook_state()


def keras() -> Any:
    """The Keras that `tf.keras` resolves to: Keras 2 on TF <= 2.15, Keras 3 on TF >= 2.16 (tf_keras with
    TF_USE_LEGACY_KERAS=1)."""
    return tf().keras


def keras_version() -> str:
    """The version of the Keras that tf.keras resolves to."""
    k = keras()
    version = getattr(k, "__version__", None)
    if version is None:  # Keras 2 inside TF: tf.keras has no __version__ on some releases; its package has one
        try:  # (keras, or tf_keras under TF_USE_LEGACY_KERAS=1, where `import keras` would be Keras 3)
            version = importlib.import_module(k.__name__.split(".")[0]).__version__
        except ImportError:
            version = tf().__version__
    return version


def keras_package() -> str:
    """The package tf.keras comes from: 'keras', or 'tf_keras' (TF >= 2.16 with TF_USE_LEGACY_KERAS=1)."""
    return "tf_keras" if keras().__name__.split(".")[0] == "tf_keras" else "keras"


def versions() -> dict:
    """Versions actually imported, for the record (asv records only the requested spec)."""
    import numpy

    return {"tensorflow": tf().__version__, "keras": keras_version(), "keras_package": keras_package(),
            "numpy": numpy.__version__, "tf_git_version": getattr(tf().version, "GIT_VERSION", None),
            "tf_distribution": tf_distribution()}


TF_DISTRIBUTIONS = ("tf-nightly-cpu", "tf-nightly", "tensorflow-cpu", "tensorflow")
NIGHTLY_NOTE = "kerasbench-nightly.json"  # in a nightly environment's folder (kerasbench.nightlies writes it)


def build_facts() -> None:
    """Read the build facts a record carries (the TF distribution, a nightly's note) once, now: a worker does it
    before its baseline, so the metadata and JSON modules they import are not counted after the loop."""
    tf_distribution()
    nightly_note()


def read_note(prefix: str) -> Optional[dict]:
    """The NIGHTLY_NOTE of the environment at `prefix`, None when it is not a nightly's."""
    from .errors import UsageError
    from .files import read_json

    try:
        note = read_json(os.path.join(prefix, NIGHTLY_NOTE), "nightly note")
    except UsageError:  # none (not a nightly's), or not one kerasbench wrote
        return None
    return note if isinstance(note, dict) else None


@functools.lru_cache(maxsize=None)
def nightly_note() -> Optional[dict]:
    """This interpreter's environment's nightly note (read_note of sys.prefix), read once."""
    import sys

    return read_note(sys.prefix)


@functools.lru_cache(maxsize=None)
def tf_distribution() -> Optional[str]:
    """The distribution that installed the `tensorflow` module (the first of TF_DISTRIBUTIONS installed: nightly
    or release, CPU or full build); None when none is. One metadata look-up each, no scan of every package: it
    runs in a measured process."""
    from importlib import metadata

    for name in TF_DISTRIBUTIONS:
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        return name
    return None


@functools.lru_cache(maxsize=None)
def _counting_sequential():
    """A Sequential subclass that counts traces of train_step and predict_step.

    The Python body of a step runs only while tf.function traces it, on Keras 2 and 3 alike,
    so a side effect there counts traces the same way in both (Keras 3's train_function is a
    plain closure with no tracing count of its own).
    """
    t = tf()

    class CountingSequential(keras().Sequential):
        def train_step(self, data):
            if t.inside_function():
                counters.count_trace("train_step")
            return super().train_step(data)

        def predict_step(self, data):
            if t.inside_function():
                counters.count_trace("predict_step")
            return super().predict_step(data)

    return CountingSequential


def small_model(units: int = 32, features: int = 20, learning_rate: float = 1e-3, jit_compile: bool = False) -> Any:
    """A compiled two-layer regressor with trace counting; jit_compile is explicit (off by default).

    Keras 3's jit_compile="auto" would turn XLA on for GPU only; Keras 2 defaults to off. The
    gpu_jit_compile strategy turns it on.
    """
    k = keras()
    model = _counting_sequential()(
        [k.layers.Input(shape=(features,)), k.layers.Dense(units, activation="relu"), k.layers.Dense(1)]
    )
    model.compile(optimizer=k.optimizers.Adam(learning_rate=learning_rate), loss="mse", jit_compile=bool(jit_compile))
    counters.count_model()
    return model


def traced_function(fn: Callable) -> Callable:
    """tf.function(fn), counting each trace of it as a 'function' trace."""

    def body(*args):
        counters.count_trace("function")
        return fn(*args)

    return tf().function(body)


# What the cleanup actions call (kerasbench.strategies.CLEANUPS) -------------------------------


def clear_session() -> None:
    """keras.backend.clear_session()."""
    keras().backend.clear_session()


def reset_default_graph() -> None:
    """tf.compat.v1.reset_default_graph()."""
    tf().compat.v1.reset_default_graph()


def clear_kernel_cache() -> None:
    """context.context().clear_kernel_cache(): the eager kernel cache."""
    from tensorflow.python.eager import context

    context.context().clear_kernel_cache()


def gpu_details() -> list:
    """[{'name', 'compute_capability'}, ...] for the GPUs TF sees; [] where there are none."""
    t = tf()
    details = []
    for device in t.config.list_physical_devices("GPU"):
        info = t.config.experimental.get_device_details(device)
        details.append({"name": info.get("device_name", device.name),
                        "compute_capability": info.get("compute_capability")})
    return details


def set_memory_growth(enabled: bool) -> None:
    """tf.config.experimental.set_memory_growth on every GPU; must run before TF initialises them."""
    t = tf()
    for device in t.config.list_physical_devices("GPU"):
        t.config.experimental.set_memory_growth(device, bool(enabled))


def build_info() -> dict:
    """CUDA and cuDNN versions this TF was built with (empty on CPU wheels)."""
    info = dict(tf().sysconfig.get_build_info())
    return {k: info[k] for k in ("cuda_version", "cudnn_version") if k in info}


def missing_feature(name: str) -> str:
    """Why feature `name` (see Strategy.needs) is unavailable here, or '' when it is available."""
    if name == "clear_kernel_cache":
        from tensorflow.python.eager import context

        ok = hasattr(context.context(), "clear_kernel_cache")
        return "" if ok else f"context.context().clear_kernel_cache is missing in TF {tf().__version__}"
    if name == "malloc_trim":
        return "" if allocators.malloc_trim_available() else "malloc_trim(0) needs glibc"
    if name == "gpu":
        return "" if tf().config.list_physical_devices("GPU") else "no GPU visible to TensorFlow"
    if name == "tf1":
        return "" if hasattr(tf(), "compat") and hasattr(tf().compat, "v1") else "tf.compat.v1 is missing"
    raise ValueError(f"unknown feature {name!r}")


def require(features: Iterable[str]) -> None:
    """Skip (kerasbench.errors.Skip) with the reason when any of `features` is unavailable here."""
    for name in features:
        why = missing_feature(name)
        if why:
            raise Skip(why)


# TF1-style graph mode --------------------------------------------------------------------


def enter_graph_mode() -> None:
    """TF1 semantics for this process: ops go to graphs, run through sessions."""
    tf().compat.v1.disable_eager_execution()


def default_graph_ops() -> int:
    """Operations in the TF1 default graph."""
    return len(tf().compat.v1.get_default_graph().get_operations())


# Probes that live inside TF ---------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _graph_building_counter():
    for module in (
        "tensorflow.python.eager.polymorphic_function.tracing_compilation",  # TF >= 2.14
        "tensorflow.python.eager.polymorphic_function.tracing_compiler",  # TF 2.11 to 2.13
        "tensorflow.python.eager.function",  # TF 2.8 to 2.10
    ):
        try:
            return importlib.import_module(module)._graph_building_time_counter
        except (ImportError, AttributeError):
            continue
    return None


def graph_building_seconds() -> Optional[float]:
    """Total seconds TF has spent building tf.function graphs in this process, or None."""
    tf()
    counter = _graph_building_counter()
    return None if counter is None else counter.get_cell().value() / 1e6


def tf_memory_info(device: str = "CPU:0") -> Optional[dict]:
    """TF allocator bytes {'current', 'peak'} on `device`, or None where TF keeps no stats."""
    try:
        return dict(tf().config.experimental.get_memory_info(device))
    except (ValueError, AttributeError, RuntimeError):
        return None


def reset_tf_memory_stats(device: str = "CPU:0") -> None:
    """Start TF's peak-bytes counter of `device` again from the bytes in use, where TF keeps one."""
    try:
        tf().config.experimental.reset_memory_stats(device)
    except (ValueError, AttributeError, RuntimeError):
        pass
