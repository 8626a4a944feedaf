"""The one module that knows TensorFlow and Keras versions apart (Keras 2 in TF <= 2.15, Keras 3 after;
tf_keras, the Keras 2 package, when TF >= 2.16 runs with TF_USE_LEGACY_KERAS=1: tf.keras is then tf_keras), and
Keras 3's backends apart (KERAS_BACKEND: tensorflow, jax or torch; docs/backends.md).

TensorFlow is imported on first use, never at import of kerasbench (nor of this module); on the jax and torch
backends it is not imported at all (Keras is, standalone, with its backend's framework).
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


# Keras 3's backends (KERAS_BACKEND; Keras 2 has tensorflow only). The runner sets the variable for a worker whose
# spec names one (RunSpec.backend); unset, Keras reads ~/.keras/keras.json, else tensorflow.
BACKENDS = ("tensorflow", "jax", "torch")
BACKEND_VAR = "KERAS_BACKEND"
FRAMEWORKS = {"jax": ("jax", "jaxlib"), "torch": ("torch",)}  # the other backends' packages (records, environments)


def backend() -> str:
    """The Keras backend this process runs: $KERAS_BACKEND, else keras.json's, else tensorflow (Keras' own order)."""
    name = os.environ.get(BACKEND_VAR)
    if name:
        return name
    try:  # Keras' config file, read as Keras reads it (no import of Keras: it would pick its backend now)
        import json

        home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
        with open(os.path.join(home, "keras.json")) as f:
            return str(json.load(f).get("backend") or "tensorflow")
    except (OSError, ValueError, AttributeError):
        return "tensorflow"


def check_backend_var() -> None:
    """A UsageError (one line) when $KERAS_BACKEND is set to a name that is no Keras backend: an environment
    variable's bad value is an error like a bad option's, not every Keras pair skipped with exit 0. Unset or empty:
    Keras' own default."""
    name = os.environ.get(BACKEND_VAR)
    if name and name not in BACKENDS:
        from .errors import UsageError

        raise UsageError(f"Unknown Keras backend. Received: ${BACKEND_VAR}={name!r}. Expected one of: "
                         f"{', '.join(BACKENDS)} (or unset it for tensorflow).")


def on_tf() -> bool:
    """Whether this process's Keras runs on TensorFlow (tf.keras): TF is then imported and its probes read."""
    return backend() == "tensorflow"


def framework() -> Any:
    """Import what the Keras loops run on, once: TensorFlow on its backend; else standalone Keras 3 on jax or torch
    (a Skip naming what is missing when it cannot), with the backend's compilations counted."""
    if on_tf():
        return tf()
    return _backend_keras()


@functools.lru_cache(maxsize=None)
def _backend_keras() -> Any:
    name = backend()
    if name not in BACKENDS:
        raise Skip(f"unknown Keras backend {name!r} ({BACKEND_VAR}); expected one of {', '.join(BACKENDS)}")
    try:
        importlib.import_module(name)
    except ImportError:
        hint = "jax[cpu]" if name == "jax" else "torch"
        raise Skip(f"the {name} backend needs {name} installed (pip install {hint})") from None
    try:
        k = importlib.import_module("keras")
    except ImportError:
        raise Skip(f"the {name} backend needs Keras 3 installed (pip install keras)") from None
    if not str(getattr(k, "__version__", "2")).split(".")[0].isdigit() or int(k.__version__.split(".")[0]) < 3:
        raise Skip(f"the {name} backend needs Keras 3; Keras {getattr(k, '__version__', '?')} is installed")
    if k.config.backend() != name:
        raise Skip(f"Keras was imported on the {k.config.backend()} backend before {BACKEND_VAR}={name} was set")
    install_compile_hook()
    return k


def install_compile_hook() -> str:
    """Count the backend's compilations in this process (counters.count_compilation): JAX's jaxpr traces and XLA
    compilations (jax.monitoring's duration events); torch's are counted by the steps themselves (dynamo)."""
    if counters.hook_state().startswith("installed"):
        return counters.hook_state()
    if backend() == "jax":
        import jax

        def listener(event: str, duration: float, **kwargs: Any) -> None:
            kind = JAX_EVENTS.get(event)
            if kind:
                counters.count_compilation(kind)

        jax.monitoring.register_event_duration_secs_listener(listener)
        counters.set_hook("installed (jax.monitoring)")
    else:
        counters.set_hook("torch: eager (Keras compiles a step only with jit_compile=True; torch.compile's traces "
                          "are counted by the steps)")
    return counters.hook_state()


# jax.monitoring's duration events, one per jaxpr trace of a jitted function and per XLA compilation
JAX_EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "jax_trace",
              "/jax/core/compile/backend_compile_duration": "xla_compile"}


def keras() -> Any:
    """The Keras the loops use: the one `tf.keras` resolves to on the tensorflow backend (Keras 2 on TF <= 2.15,
    Keras 3 on TF >= 2.16, tf_keras with TF_USE_LEGACY_KERAS=1); standalone Keras 3 on jax and torch."""
    return tf().keras if on_tf() else _backend_keras()


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
    """Versions actually imported, for the record (asv records only the requested spec): TF's on its backend; on
    jax and torch the backend's framework (jax and jaxlib, or torch) and TF's as installed, not imported."""
    import numpy

    if not on_tf():
        name = keras().config.backend()
        return {"tensorflow": installed_version("tensorflow"), "keras": keras_version(), "keras_package": "keras",
                "keras_backend": name, "backend_versions": {n: installed_version(n) for n in FRAMEWORKS.get(name, ())},
                "numpy": numpy.__version__, "tf_distribution": tf_distribution()}
    return {"tensorflow": tf().__version__, "keras": keras_version(), "keras_package": keras_package(),
            "keras_backend": "tensorflow", "numpy": numpy.__version__,
            "tf_git_version": getattr(tf().version, "GIT_VERSION", None), "tf_distribution": tf_distribution()}


def installed_version(name: str) -> Optional[str]:
    """The version of module `name`'s distribution as installed (not imported: a metadata look-up), None if absent."""
    from importlib import metadata

    for dist in (name, f"{name}-cpu"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


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
    plain closure with no tracing count of its own). On JAX the body runs while jax.jit traces it (its arguments are
    tracers; JAX's train_step takes the state too); on torch only while torch.compile does (jit_compile=True).
    """
    tracing = _tracing()

    class CountingSequential(keras().Sequential):
        def train_step(self, *args):
            if tracing(args):
                counters.count_trace("train_step")
            return super().train_step(*args)

        def predict_step(self, *args):
            if tracing(args):
                counters.count_trace("predict_step")
            return super().predict_step(*args)

    return CountingSequential


def _tracing() -> Callable[[tuple], bool]:
    """Whether a step's body runs inside its backend's tracing now (given the step's arguments)."""
    if on_tf():
        t = tf()
        return lambda args: t.inside_function()
    if backend() == "jax":
        import jax

        return lambda args: any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(args))
    import torch

    return lambda args: bool(torch.compiler.is_compiling())


def small_model(units: int = 32, features: int = 20, learning_rate: float = 1e-3, jit_compile: bool = False) -> Any:
    """A compiled two-layer regressor with trace counting; jit_compile is explicit on TF (off by default).

    Keras 3's jit_compile="auto" would turn XLA on for GPU only; Keras 2 defaults to off. The
    gpu_jit_compile strategy turns it on. On jax and torch a step runs as the backend runs it by default (jax.jit
    on JAX, eager on torch: "auto"), unless the strategy asks for jit_compile.
    """
    k = keras()
    model = _counting_sequential()(
        [k.layers.Input(shape=(features,)), k.layers.Dense(units, activation="relu"), k.layers.Dense(1)]
    )
    jit = bool(jit_compile) if on_tf() or jit_compile else "auto"
    model.compile(optimizer=k.optimizers.Adam(learning_rate=learning_rate), loss="mse", jit_compile=jit)
    counters.count_model()
    return model


def traced_function(fn: Callable) -> Callable:
    """tf.function(fn) (jax.jit on JAX), counting each trace of it as a 'function' trace; on torch, fn as it is
    (eager: nothing is traced)."""
    if backend() == "torch":
        return fn

    def body(*args):
        counters.count_trace("function")
        return fn(*args)

    if backend() == "jax":
        import jax

        return jax.jit(body)
    return tf().function(body)


# What the cleanup actions call (kerasbench.strategies.CLEANUPS) -------------------------------


def clear_session() -> None:
    """keras.backend.clear_session()."""
    keras().backend.clear_session()


def jax_clear_caches() -> None:
    """jax.clear_caches(): JAX's caches of traced and compiled functions."""
    import jax

    jax.clear_caches()


def torch_empty_cache() -> None:
    """torch.cuda.empty_cache(): the caching allocator's unused GPU blocks handed back to the driver."""
    import torch

    torch.cuda.empty_cache()


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
    if name == "malloc_trim":
        return "" if allocators.malloc_trim_available() else "malloc_trim(0) needs glibc"
    if name in BACKENDS:  # a step of that backend only
        return "" if backend() == name else f"needs the {name} backend ({BACKEND_VAR}={backend()} here)"
    if not on_tf():
        return _missing_off_tf(name)
    if name == "clear_kernel_cache":
        from tensorflow.python.eager import context

        ok = hasattr(context.context(), "clear_kernel_cache")
        return "" if ok else f"context.context().clear_kernel_cache is missing in TF {tf().__version__}"
    if name == "gpu":
        return "" if tf().config.list_physical_devices("GPU") else "no GPU visible to TensorFlow"
    if name == "tf1":
        return "" if hasattr(tf(), "compat") and hasattr(tf().compat, "v1") else "tf.compat.v1 is missing"
    raise ValueError(f"unknown feature {name!r}")


def _missing_off_tf(name: str) -> str:
    """missing_feature on the jax and torch backends: TF's own features are missing there."""
    if name == "gpu":
        return "" if gpu_count() else f"no GPU visible to {backend()}"
    if name in ("clear_kernel_cache", "tf1"):
        return f"{name} is TensorFlow's: the {backend()} backend has none"
    raise ValueError(f"unknown feature {name!r}")


def gpu_count() -> int:
    """GPUs the backend's framework sees (jax.devices('gpu'), torch.cuda.device_count(), TF's list)."""
    name = backend()
    if name == "jax":
        import jax

        try:
            return len(jax.devices("gpu"))
        except RuntimeError:  # no GPU platform
            return 0
    if name == "torch":
        import torch

        return torch.cuda.device_count()
    return len(tf().config.list_physical_devices("GPU"))


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


def gpu_memory_info(device: str = "GPU:0") -> Optional[dict]:
    """The backend's GPU allocator bytes {'current', 'peak'} on its first GPU, or None where it keeps none: TF's
    (tf_memory_info of `device`), JAX's device memory_stats (bytes_in_use, peak_bytes_in_use: the process's peak,
    JAX resets none), torch's caching allocator (memory_allocated, max_memory_allocated)."""
    name = backend()
    if name == "tensorflow":
        return tf_memory_info(device)
    try:
        if name == "jax":
            import jax

            stats = jax.devices("gpu")[0].memory_stats() or {}
            if "bytes_in_use" not in stats:
                return None
            return {"current": int(stats["bytes_in_use"]), "peak": int(stats.get("peak_bytes_in_use", 0))}
        import torch

        if not torch.cuda.is_available():
            return None
        return {"current": int(torch.cuda.memory_allocated(0)), "peak": int(torch.cuda.max_memory_allocated(0))}
    except (RuntimeError, IndexError, ImportError, AttributeError):
        return None


def reset_gpu_memory_stats(device: str = "GPU:0") -> None:
    """Start the backend's GPU peak counter again from the bytes in use, where it keeps one (TF, torch; not JAX)."""
    name = backend()
    if name == "tensorflow":
        reset_tf_memory_stats(device)
    elif name == "torch":
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.reset_peak_memory_stats(0)
        except (RuntimeError, ImportError):
            pass


def reset_tf_memory_stats(device: str = "CPU:0") -> None:
    """Start TF's peak-bytes counter of `device` again from the bytes in use, where TF keeps one."""
    try:
        tf().config.experimental.reset_memory_stats(device)
    except (ValueError, AttributeError, RuntimeError):
        pass
