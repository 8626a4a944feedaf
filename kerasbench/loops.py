"""Loop shapes: what one iteration of a user's loop does, taken from the seed documents.

Two sides of one loop shape: its registry entry (LoopShape, in LOOPS: a name, a description and
what the measured process must do for it) and its runtime (a LoopRuntime subclass, instantiated
once in the measured process with the strategy it runs under). A runtime builds a model (`build`)
and does one iteration's work with it (`run`). What happens to the model, the outputs and TF state
between iterations is the strategy's business (kerasbench.strategies); kerasbench.worker composes
the two (MeasuredPair). TensorFlow is imported inside the methods, through kerasbench._compat, so
this registry can be read without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from . import _compat
from .errors import unknown

FEATURES = 20


def _data(rows, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, FEATURES), dtype=np.float32)
    y = (x[:, :1] * 0.5 + rng.standard_normal((rows, 1), dtype=np.float32) * 0.1).astype(np.float32)
    return x, y


@dataclass
class Step:
    """What one iteration's `run` gets from the measured pair besides the model."""

    batch_size: int
    forward: Optional[Callable] = None  # a tf.function (jax.jit) of the forward pass made this iteration


class LoopRuntime:
    """Base of the runtime side of a loop shape: one instance lives in the measured process.

    `spec` is the run's RunSpec (batch size, leak size, repro file); `strategy` the Strategy it runs under.
    """

    def __init__(self, spec: Any, strategy: Any):  # a RunSpec and a Strategy (spec.py imports this module)
        self.spec = spec
        self.strategy = strategy

    def setup(self) -> None:
        """Make the data the iterations use (once, before warm-up)."""

    def make_model(self, **kwargs: Any) -> Any:
        """_compat.small_model with the strategy's jit_compile knob."""
        return _compat.small_model(jit_compile=self.strategy.jit_compile, **kwargs)

    def build(self, i: int) -> Any:
        """A new model for iteration i (built and compiled)."""
        return self.make_model()

    def run(self, model: Any, i: int, step: Step) -> Any:
        """One iteration's work; returns what a user might keep (a History, predictions)."""
        raise NotImplementedError

    def release(self) -> None:
        """Drop any reference the loop itself holds to the current model."""

    def teardown(self) -> None:
        """Drop everything the loop holds (data, pipelines, namespaces)."""
        self.__dict__.clear()


class Sweep(LoopRuntime):
    # (units, learning rate) cycled: a new model per configuration, as in a grid search.
    CONFIGS = ((16, 1e-3), (32, 1e-3), (16, 1e-2), (32, 1e-2))

    def setup(self) -> None:
        self.x, self.y = _data(512)
        self.x_val, self.y_val = _data(128, seed=1)

    def build(self, i: int) -> Any:
        units, learning_rate = self.CONFIGS[i % len(self.CONFIGS)]
        return self.make_model(units=units, learning_rate=learning_rate)

    def run(self, model: Any, i: int, step: Step) -> Any:
        start = (i % 5) * 64  # a new 256-row chunk of the data every iteration, same shape
        x, y = self.x[start : start + 256], self.y[start : start + 256]
        history = model.fit(x, y, epochs=2, batch_size=step.batch_size, verbose=0)
        model.evaluate(self.x_val, self.y_val, batch_size=step.batch_size, verbose=0)
        return history


class KFold(LoopRuntime):
    FOLDS = 5

    def setup(self) -> None:
        self.x, self.y = _data(640)

    def run(self, model: Any, i: int, step: Step) -> Any:
        fold = i % self.FOLDS
        val = np.arange(fold * 128, (fold + 1) * 128)
        train = np.setdiff1d(np.arange(len(self.x)), val)
        history = model.fit(self.x[train], self.y[train], epochs=2, batch_size=step.batch_size, verbose=0)
        model.evaluate(self.x[val], self.y[val], batch_size=step.batch_size, verbose=0)
        return history


class Notebook(LoopRuntime):
    """The same two cells executed again and again in one long-lived namespace, as in a kernel."""

    BUILD_CELL = compile("model = make_model()\n", "<cell 1>", "exec")
    RUN_CELL = compile(
        "history = model.fit(x, y, epochs=2, batch_size=batch_size, verbose=0)\n"
        "preds = model.predict(x_val, batch_size=batch_size, verbose=0)\n",
        "<cell 2>",
        "exec",
    )

    def setup(self) -> None:
        x, y = _data(512)
        self.namespace = {"make_model": self.make_model, "x": x, "y": y, "x_val": _data(128, 1)[0]}

    def build(self, i: int) -> Any:
        exec(self.BUILD_CELL, self.namespace)
        return self.namespace["model"]

    def run(self, model: Any, i: int, step: Step) -> Any:
        self.namespace.update(model=model, batch_size=step.batch_size)
        exec(self.RUN_CELL, self.namespace)
        return self.namespace["history"]

    def release(self) -> None:
        self.namespace.pop("model", None)


class Inference(LoopRuntime):
    """Repeated inference with one model: model.predict(x) and a direct call model(x)."""

    def setup(self) -> None:
        self.x, _ = _data(1024)

    def run(self, model: Any, i: int, step: Step) -> Any:
        b = step.batch_size
        predictions = model.predict(self.x[: 4 * b], batch_size=b, verbose=0)
        direct = (step.forward or model)(self.x[:b])
        return predictions, direct


class BatchStream(LoopRuntime):
    """Batches arrive one at a time: train_on_batch, predict_on_batch and a served tf.function."""

    def setup(self) -> None:
        self.x, self.y = _data(1024)
        self.serve = self.served_model = None

    def run(self, model: Any, i: int, step: Step) -> Any:
        b = step.batch_size
        start = (i * 32) % (len(self.x) - b)
        xb, yb = self.x[start : start + b], self.y[start : start + b]
        model.train_on_batch(xb, yb)
        predictions = model.predict_on_batch(xb)
        forward = step.forward
        if forward is None:  # one tf.function per model, defined outside the loop
            if self.served_model is not model:
                self.serve = _compat.traced_function(lambda t: model(t, training=False))
                self.served_model = model
            forward = self.serve
        return predictions, forward(xb)

    def release(self) -> None:
        self.serve = self.served_model = None


class TfData(LoopRuntime):
    """model.fit on a tf.data pipeline (from_tensor_slices, shuffle, batch, prefetch)."""

    def setup(self) -> None:
        self.x, self.y = _data(1024)
        self.dataset = None

    def make_dataset(self, batch_size: int) -> Any:
        tf = _compat.tf()
        ds = tf.data.Dataset.from_tensor_slices((self.x, self.y)).shuffle(1024, seed=0)
        return ds.batch(batch_size).prefetch(tf.data.AUTOTUNE)

    def run(self, model: Any, i: int, step: Step) -> Any:
        if self.strategy.dataset == "rebuild" or self.dataset is None:
            self.dataset = self.make_dataset(step.batch_size)
        return model.fit(self.dataset, epochs=1, verbose=0)


class Tf1Graph(LoopRuntime):
    """TF1-style code: placeholders, variables and a session per iteration (tf.compat.v1)."""

    def setup(self) -> None:
        _compat.enter_graph_mode()
        self.x, _ = _data(256)
        # The variable's initial value is baked into the graph as a 320 KiB constant, as when a
        # numpy array is passed to tf.Variable or tf.constant: graph growth shows up in RSS.
        self.w = np.random.default_rng(2).standard_normal((FEATURES, 4096), dtype=np.float32)

    def build(self, i: int) -> Any:
        return None

    def run(self, model: Any, i: int, step: Step) -> Any:
        tf = _compat.tf()
        v1 = tf.compat.v1
        mode = self.strategy.graph
        graph = tf.Graph() if mode == "explicit" else v1.get_default_graph()
        with graph.as_default():
            x = v1.placeholder(tf.float32, [None, FEATURES])
            w = v1.Variable(self.w)
            y = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)), axis=1)
            init = v1.variables_initializer([w])
        sess = v1.Session(graph=graph)
        sess.run(init)
        out = sess.run(y, {x: self.x})
        if mode != "default":  # "default": the session is left to the garbage collector
            sess.close()
        if mode == "reset":
            v1.reset_default_graph()
        return out


class Control(LoopRuntime):
    """No TF: does nothing, or keeps a leak of known size per iteration (spec.leak_bytes).

    The Python leak is made of 11-item tuples (128 bytes each, one pymalloc size class) that
    hold a shared list, so the garbage collector tracks them; with its list slot, 136 bytes an item.
    """

    ITEM_BYTES = 136

    def setup(self) -> None:
        self.kept = []
        self.anchor = []

    def build(self, i: int) -> Any:
        return None

    def run(self, model: Any, i: int, step: Step) -> Any:
        n = self.spec.leak_bytes
        if self.strategy.leak == "native":
            self.kept.append(np.ones(n // 8))  # written pages: all of it is resident
        elif self.strategy.leak == "python":
            tail = (None,) * 10
            self.kept.append([(self.anchor,) + tail for _ in range(n // self.ITEM_BYTES)])


class Repro(LoopRuntime):
    """A user's own loop body from a Python file (kerasbench.repro): --repro FILE."""

    def setup(self) -> None:
        from .repro import ReproFile

        self.code = ReproFile(self.spec.repro)
        self.code.setup()

    def build(self, i: int) -> Any:
        return self.code.build()

    def run(self, model: Any, i: int, step: Step) -> Any:
        return self.code.iteration(model)


@dataclass(frozen=True)
class LoopShape:
    """A registry entry: a loop from the seeds, its runtime, and what the measured process does for it."""

    name: str
    description: str
    runtime: type  # the LoopRuntime subclass that does its iterations
    needs_tf: bool = True
    rebuilds: bool = False  # the model a strategy with model="loop" gets: new per iteration or one
    needs_file: bool = False  # measured only with a user's file (--repro): not in "all" nor in asv
    counts_steps: bool = True  # its models are _compat's, whose train/predict steps count their traces
    extra_probes: tuple = ()  # probes only this shape needs, read in process (names from probes.PROBES)
    teardown_cleanup: str = "clear_session"  # what ends it once TF is loaded (a name from strategies.CLEANUPS)
    tf_only: str = ""  # why it runs on Keras' tensorflow backend only (TF's own API), "" when it runs on every one

    def off_backend(self, backend: str) -> str:
        """Why this loop cannot run on Keras' `backend` (a tf_only loop off tensorflow), '' when it can."""
        if self.tf_only and backend != "tensorflow":
            return (f"loop {self.name} runs on the tensorflow backend only ({self.tf_only}; "
                    f"{_compat.BACKEND_VAR}={backend} here)")
        return ""


LOOPS = {
    shape.name: shape
    for shape in (
        LoopShape("sweep", "Hyperparameter sweep: a new small model per configuration (build, compile, fit, evaluate).",
                  Sweep, rebuilds=True),
        LoopShape("kfold", "k-fold cross-validation: a fresh model per fold, fit on 4/5, evaluate on 1/5.",
                  KFold, rebuilds=True),
        LoopShape("notebook", "Notebook re-run: the same build and fit cells executed again in one namespace.",
                  Notebook, rebuilds=True),
        LoopShape("inference", "Repeated inference with one model: model.predict(x) and model(x).", Inference),
        LoopShape("batch_stream", "Streaming batches: train_on_batch, predict_on_batch and a served tf.function.",
                  BatchStream),
        LoopShape("tf_data", "Input pipeline: model.fit on a tf.data pipeline every iteration.", TfData,
                  tf_only="tf.data's pipeline is TensorFlow's"),
        LoopShape("tf1_graph", "TF1-style graph building: placeholders, variables, sessions (tf.compat.v1).",
                  Tf1Graph, extra_probes=("graph_ops",), teardown_cleanup="reset_default_graph",
                  tf_only="TF1 graphs and sessions are TensorFlow's, without Keras"),
        LoopShape("control", "Control loop without TF: nothing, or a leak of known size per iteration.",
                  Control, needs_tf=False),
        LoopShape("repro", "Your own loop body: setup/build/iteration from a Python file (--repro FILE).",
                  Repro, rebuilds=True, needs_file=True, counts_steps=False),
    )
}


def builtin_loops() -> list:
    """Names of the loop shapes that need no user file: what `all` and the asv suite cover."""
    return [name for name, shape in LOOPS.items() if not shape.needs_file]


def get_loop(name: str) -> LoopShape:
    """The loop shape called `name`, or a UsageError listing the valid names."""
    try:
        return LOOPS[name]
    except KeyError:
        raise unknown("loop", name, LOOPS) from None
