"""Cleanup and reuse strategies: what a loop does with its model, data and TF state between iterations.

A strategy is a handful of declarative knobs; `kerasbench.worker` composes them with a loop shape.
Each strategy names the loop shapes it applies to; any other pair is a clean skip. The cleanup
actions a strategy runs after each iteration are declared here once (CLEANUPS), with what they call:
TensorFlow only through kerasbench._compat, which imports it when an action first needs it.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from . import _compat, allocators
from .errors import UsageError, unknown

# Loop-shape groups a strategy can apply to (names from kerasbench.loops).
TRAINING = frozenset({"sweep", "kfold", "notebook"})
REBUILDING = TRAINING | {"inference", "repro"}  # repro: a user's file (kerasbench.repro)
REUSING = frozenset({"inference", "batch_stream"})
KERAS = REBUILDING | REUSING | {"tf_data"}


@dataclass(frozen=True)
class Cleanup:
    """One cleanup action: its name in Strategy.cleanup, what it does, and the function that does it."""

    name: str
    description: str
    action: Callable[[Any], None]  # called with the measured pair (kerasbench.worker.MeasuredPair)
    needs: tuple = ()  # features of the installed TF it needs (see _compat.missing); a composition inherits them


# Cleanup actions, run in a strategy's order after each iteration, each measurable on its own.
CLEANUPS = {
    c.name: c
    for c in (
        Cleanup("del_model", "drop every reference the loop holds to this iteration's model (`del model`)",
                lambda pair: pair.release_model()),
        Cleanup("clear_session", "keras.backend.clear_session() (tf.keras's on TF)",
                lambda pair: _compat.clear_session()),
        Cleanup("gc_collect", "gc.collect()", lambda pair: gc.collect()),
        Cleanup("reset_default_graph", "tf.compat.v1.reset_default_graph()",
                lambda pair: _compat.reset_default_graph(), needs=("tensorflow",)),
        Cleanup("clear_kernel_cache", "context.context().clear_kernel_cache() (the eager kernel cache)",
                lambda pair: _compat.clear_kernel_cache(), needs=("clear_kernel_cache", "tensorflow")),
        Cleanup("malloc_trim", "glibc malloc_trim(0): hand freed heap pages back to the OS",
                lambda pair: allocators.malloc_trim(), needs=("malloc_trim",)),
        # the jax and torch backends' own (Keras 3; docs/backends.md)
        Cleanup("jax_clear_caches", "jax.clear_caches(): JAX's caches of traced and compiled functions",
                lambda pair: _compat.jax_clear_caches(), needs=("jax",)),
        Cleanup("torch_empty_cache", "torch.cuda.empty_cache(): the caching allocator's unused GPU blocks freed",
                lambda pair: _compat.torch_empty_cache(), needs=("torch", "gpu")),
    )
}


@dataclass(frozen=True)
class Strategy:
    """What the loop does with its model and session state between iterations."""

    name: str
    description: str
    applies_to: frozenset
    model: str = "loop"  # "rebuild" every iteration, "reuse" one, or the loop shape's own habit
    cleanup: tuple = ()  # names from CLEANUPS, run after every iteration (on a reused model,
    #                      del_model and clear_session are left out: they would destroy it)
    keep_outputs: bool = False  # append each History / prediction to a long-lived list
    batch_sizes: str = "stable"  # or "varying": a new batch size every iteration
    function_in_loop: bool = False  # a new tf.function wrapping the forward pass each iteration
    dataset: str = "reuse"  # tf.data pipeline: "reuse" one or "rebuild" one per iteration
    graph: str = ""  # TF1 graph handling: "default", "close", "explicit", "reset"
    isolate: bool = False  # each iteration in its own spawned child process
    leak: str = ""  # controls only: "native" or "python" bytes kept per iteration
    needs: tuple = field(default=())  # features of the installed TF that must exist (see _compat)
    # GPU knobs (strategies that set them need the "gpu" feature, so they skip cleanly on CPU):
    memory_growth: str = ""  # "on" / "off": set_memory_growth right after TF is imported; "" leaves TF's default
    gpu_allocator: str = ""  # "bfc": TF_GPU_ALLOCATOR unset for the worker; "cuda_malloc_async": set to it;
    #                          "" inherits the caller's environment
    jit_compile: bool = False  # passed to _compat.small_model

    @property
    def needs_gpu(self) -> bool:
        """Whether this strategy only runs with --device gpu."""
        return "gpu" in self.needs

    @property
    def backend(self) -> str:
        """The Keras backend this strategy runs on only (its cleanup is that framework's), '' when any."""
        return next((n for n in self.needs if n in _compat.BACKENDS), "")

    def batch_size(self, iteration: int, default: int) -> int:
        """Iteration `iteration`'s batch size: `default` (the spec's), or for varying ones a new size in [8, 128)."""
        if self.batch_sizes == "varying":
            return 8 + (iteration * 7) % VARYING_SIZES  # 7 and 120 are coprime: 120 distinct sizes before one repeats
        return default

    @property
    def period(self) -> int:
        """Iterations before an iteration's inputs repeat: 1, or the VARYING_SIZES batch sizes of a varying strategy.
        Whether growth persists once the inputs repeat can only be judged past them (Profile.counts_for)."""
        return VARYING_SIZES if self.batch_sizes == "varying" else 1

    def __post_init__(self) -> None:
        for knob, value, valid in (("memory_growth", self.memory_growth, MEMORY_GROWTH),
                                   ("gpu_allocator", self.gpu_allocator, GPU_ALLOCATORS)):
            if value not in valid:
                raise ValueError(f"Strategy {self.name}: unknown {knob} {value!r}. "
                                 f"Expected one of: {', '.join(map(repr, valid))}.")


VARYING_SIZES = 120  # the distinct batch sizes of a varying strategy, in [8, 128)
MEMORY_GROWTH = ("", "on", "off")
GPU_ALLOCATORS = ("", "bfc", "cuda_malloc_async")


_ALL_CLEAR = ("del_model", "clear_session", "gc_collect")

STRATEGIES = {
    s.name: s
    for s in (
        Strategy("rebuild_no_clear", "New model every iteration; nothing released but the rebound name.",
                 REBUILDING, model="rebuild"),
        Strategy("clear_session", "New model every iteration, then clear_session() (model still bound).",
                 REBUILDING, model="rebuild", cleanup=("clear_session",)),
        Strategy("clear_session_del_gc", "New model every iteration, then del model, clear_session(), gc.collect().",
                 REBUILDING, model="rebuild", cleanup=_ALL_CLEAR),
        Strategy("gc_collect_only", "New model every iteration, then del model and gc.collect() only.",
                 REBUILDING, model="rebuild", cleanup=("del_model", "gc_collect")),
        Strategy("reset_default_graph_only",
                 "New model every iteration, then del model and reset_default_graph() only.",
                 REBUILDING, model="rebuild", cleanup=("del_model", "reset_default_graph"), needs=("tensorflow",)),
        Strategy("clear_kernel_cache_only",
                 "New model every iteration, then del model and the eager kernel-cache clear only.",
                 REBUILDING, model="rebuild", cleanup=("del_model", "clear_kernel_cache"),
                 needs=("clear_kernel_cache", "tensorflow")),
        Strategy("malloc_trim", "clear_session_del_gc, then malloc_trim(0) so glibc returns freed pages.",
                 REBUILDING, model="rebuild", cleanup=_ALL_CLEAR + ("malloc_trim",), needs=("malloc_trim",)),
        Strategy("reuse_model", "Build and compile one model; every iteration fits or predicts on new data.",
                 REBUILDING, model="reuse"),
        Strategy("keep_outputs", "Keep every History / prediction in a long-lived list (cleanup as release_outputs).",
                 KERAS - {"tf_data"}, cleanup=_ALL_CLEAR, keep_outputs=True),
        Strategy("release_outputs",
                 "Drop each History / prediction after use; rebuilt models get del + clear_session + gc.",
                 KERAS - {"tf_data"}, cleanup=_ALL_CLEAR),
        Strategy("stable_batch_shapes", "One model; every iteration feeds batches of the same shape.",
                 REUSING, model="reuse"),
        Strategy("varying_batch_shapes", "One model; every iteration feeds a new batch size (the retracing case).",
                 REUSING, model="reuse", batch_sizes="varying"),
        Strategy("function_in_loop",
                 "One model; a new tf.function wrapping its forward pass is defined every iteration.",
                 REUSING, model="reuse", function_in_loop=True),
        Strategy("reuse_dataset", "One tf.data pipeline built once and fitted on every iteration.",
                 frozenset({"tf_data"}), model="reuse"),
        Strategy("rebuild_dataset", "A new tf.data pipeline (slices, shuffle, batch, prefetch) every iteration.",
                 frozenset({"tf_data"}), model="reuse", dataset="rebuild"),
        Strategy("tf1_default_graph", "TF1: ops added to the default graph every iteration; sessions never closed.",
                 frozenset({"tf1_graph"}), graph="default", needs=("tf1",)),
        Strategy("tf1_sess_close", "TF1: ops added to the default graph every iteration; sess.close() alone.",
                 frozenset({"tf1_graph"}), graph="close", needs=("tf1",)),
        Strategy("tf1_explicit_graph", "TF1: a new tf.Graph and session per iteration (with ... as_default()).",
                 frozenset({"tf1_graph"}), graph="explicit", needs=("tf1",)),
        Strategy("tf1_reset_default_graph",
                 "TF1: default graph, sess.close(), then reset_default_graph() per iteration.",
                 frozenset({"tf1_graph"}), graph="reset", needs=("tf1",)),
        Strategy("process_isolation", "Each iteration runs in its own spawned process; the parent never imports TF.",
                 frozenset({"sweep", "kfold", "inference", "tf1_graph", "repro"}), model="rebuild", isolate=True,
                 graph="explicit"),
        # GPU strategies: the full cleanup pattern (clear_session_del_gc on loops that rebuild, gc only on
        # a reused model), each differing from gpu_growth_on in one knob. They need --device gpu; the allocator
        # knobs are TF's (tensorflow backend), jit_compile any backend's.
        Strategy("gpu_growth_off",
                 "GPU, TF's default: the BFC allocator reserves most of the GPU up front (memory growth off).",
                 REBUILDING, cleanup=_ALL_CLEAR, memory_growth="off", gpu_allocator="bfc", needs=("gpu", "tensorflow")),
        Strategy("gpu_growth_on", "GPU, set_memory_growth(True): the BFC allocator reserves GPU memory as it needs it.",
                 REBUILDING, cleanup=_ALL_CLEAR, memory_growth="on", gpu_allocator="bfc", needs=("gpu", "tensorflow")),
        Strategy("gpu_malloc_async", "GPU, as gpu_growth_on but TF_GPU_ALLOCATOR=cuda_malloc_async instead of BFC.",
                 REBUILDING, cleanup=_ALL_CLEAR, memory_growth="on", gpu_allocator="cuda_malloc_async",
                 needs=("gpu", "tensorflow")),
        Strategy("gpu_jit_compile", "GPU, as gpu_growth_on but models compiled with jit_compile=True (XLA).",
                 REBUILDING, cleanup=_ALL_CLEAR, memory_growth="on", gpu_allocator="bfc", jit_compile=True,
                 needs=("gpu",)),
        # The jax and torch backends' own cleanups (Keras 3 with KERAS_BACKEND; --backend), after the full pattern
        Strategy("jax_clear_caches", "New model every iteration, then del model, clear_session(), gc.collect() and "
                 "jax.clear_caches() (JAX's traced and compiled functions).", REBUILDING, model="rebuild",
                 cleanup=_ALL_CLEAR + ("jax_clear_caches",), needs=("jax",)),
        Strategy("torch_empty_cache", "GPU, torch: new model every iteration, then del model, clear_session(), "
                 "gc.collect() and torch.cuda.empty_cache().", REBUILDING, model="rebuild",
                 cleanup=_ALL_CLEAR + ("torch_empty_cache",), needs=("torch", "gpu")),
        Strategy("control_noop", "Control: the iteration does nothing (no TF); must read flat.",
                 frozenset({"control"})),
        Strategy("control_leak_native", "Control: keeps a numpy buffer of --leak-kib KiB per iteration.",
                 frozenset({"control"}), leak="native"),
        Strategy("control_leak_python", "Control: keeps --leak-kib KiB of small Python objects per iteration.",
                 frozenset({"control"}), leak="python"),
    )
}


# A composed strategy is data, not a registry entry: a strategy's name, then cleanup steps (names from CLEANUPS)
# run after its own, joined by STEP_JOIN, e.g. "rebuild_no_clear+del_model+gc_collect" (kerasbench.ablate).
STEP_JOIN = "+"


def compose(base: str, steps: Sequence[str]) -> str:
    """The name of strategy `base` with cleanup `steps` run after its own (just `base` when there are none)."""
    return STEP_JOIN.join((base,) + tuple(steps))


def split(name: str) -> tuple:
    """(base strategy name, steps) of a strategy name; a registry strategy has no steps."""
    base, *steps = name.split(STEP_JOIN)
    return base, tuple(steps)


@functools.lru_cache(maxsize=None)
def _composed(name: str) -> Strategy:
    base_name, steps = split(name)
    base = get_strategy(base_name)
    for step in steps:
        if step not in CLEANUPS:
            raise unknown("cleanup step", step, CLEANUPS)
    cleanup = base.cleanup + steps
    if len(set(cleanup)) < len(cleanup):
        raise UsageError(f"Strategy {name} runs a cleanup step twice. Expected each of {', '.join(CLEANUPS)} "
                         "at most once.")
    needs = base.needs + tuple(dict.fromkeys(n for s in steps for n in CLEANUPS[s].needs if n not in base.needs))
    return dataclasses.replace(base, name=name, cleanup=cleanup, needs=needs,
                               description=f"{base_name}, then after every iteration: {', '.join(steps)}.")


def get_strategy(name: str) -> Strategy:
    """The strategy called `name` (a registry name, or one composed with cleanup steps), else a UsageError."""
    if name in STRATEGIES:
        return STRATEGIES[name]
    if STEP_JOIN in name and name.split(STEP_JOIN, 1)[0] in STRATEGIES:
        return _composed(name)
    raise unknown("strategy", name, STRATEGIES)


def strategies_for(loop: str) -> list:
    """Names of the strategies that apply to loop shape `loop`, in registry order."""
    return [s.name for s in STRATEGIES.values() if loop in s.applies_to]
