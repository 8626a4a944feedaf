"""Trace and model counters of the measured process: bumped from traced Python bodies and model builds
(kerasbench._compat) or from isolated children's reports (kerasbench.worker), read by the trace probe.

Its own module so that _compat, which bumps them, and probes, which read them, need not import each other.
"""

import collections
import contextlib
import threading
import weakref

_COUNTS = collections.Counter()


def count_trace(kind: str, n: int = 1) -> None:
    """Count `n` traces of `kind` ("train_step", "predict_step" or "function"); a step marks the tf.functions being
    traced around it as on its path (mark_path)."""
    _COUNTS["traces:" + kind] += n
    mark_path(kind)


def count_model(n: int = 1) -> None:
    """Count `n` models built and compiled."""
    _COUNTS["models"] += n


def count_compilation(kind: str, n: int = 1) -> None:
    """Count `n` of a backend's compilation events (kerasbench._compat.JAX_EVENTS: 'jax_trace', 'xla_compile')."""
    _COUNTS["compilations:" + kind] += n


def compilations(kind: str) -> int:
    """A backend's compilation events of `kind` so far in this process."""
    return _COUNTS["compilations:" + kind]


def traces(kind: str) -> int:
    """Traces of `kind` counted so far in this process."""
    return _COUNTS["traces:" + kind]


def models_built() -> int:
    """Models built and compiled so far in this process."""
    return _COUNTS["models"]


# ---------------------------------------------------------------- every trace of every tf.function
#
# kerasbench._compat hooks TF's one entry point for tracing a tf.function (where a trace makes a ConcreteFunction:
# tracing_compilation on TF >= 2.14, TracingCompiler on 2.12/2.13), which calls trace_started / trace_ended around
# each trace. A function is one tf.function instance (told apart by its cache of concrete functions); the functions
# traced while it traces are nested in it, and a train_step / predict_step traced inside marks every function
# around it as being on the training / prediction path.
#
# Nothing here keeps TF's objects alive: a measuring tool that held every tf.function's cache would itself leak
# every graph ever traced (TF's FunctionCache takes no weak reference). An instance is known by the id of its cache
# while its owner lives (a weak reference to what holds the cache: TracingOptions on TF >= 2.14, the
# TracingCompiler before; "live" counts them) and by a weak reference to each concrete function it made ("held":
# concrete functions alive anywhere). The tables are grouped by function as traces happen, and an instance with
# nothing alive is dropped from them, so their size follows what the loop itself keeps alive.


OWNERS = {  # module prefix of the traced Python function: who owns it
    "keras": "keras", "tf_keras": "keras", "tensorflow.python.data": "tf.data", "tensorflow": "tensorflow",
    "kerasbench": "loop",
}
PATHS = {"train_step": "train", "predict_step": "predict"}

_LOCK = threading.Lock()
_GROUPS: dict = {}  # (owner, module, qualname): {name, instances, traces, paths}, in the order first traced
_LIVE: dict = {}  # id of an instance's cache: {"group", "owners": weakrefs to its owners, "refs": to its concrete fns}
_RETIRED: list = []  # instances whose cache id went to a newer one, while a concrete function they made lives
_TRACING = threading.local()  # .stack: the instances being traced in this thread, outermost first
_HOOK = {"state": "not installed"}
_PRUNE = {"at": 64}  # prune the instances with nothing alive when there are this many (then twice what is left)


def owner_of(module: str, qualname: str) -> str:
    """Who owns a traced function: 'keras step', 'keras wrapper', 'tf.data', 'tensorflow', 'loop' (kerasbench's own
    loop shapes) or 'user'."""
    for prefix, owner in OWNERS.items():
        if module == prefix or module.startswith(prefix + "."):
            if owner == "keras":
                return "keras step" if qualname.rsplit(".", 1)[-1] in ("train_step", "test_step", "predict_step") \
                    else "keras wrapper"
            return owner
    return "user"


def _describe(python_function) -> tuple:
    fn = python_function
    for _ in range(10):  # functools.partial, decorators (functools.wraps keeps __wrapped__), bound methods
        fn = getattr(fn, "func", None) or getattr(fn, "__wrapped__", None) or getattr(fn, "__func__", None) or fn
        if not (hasattr(fn, "func") or hasattr(fn, "__wrapped__") or hasattr(fn, "__func__")):
            break
    qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    module = getattr(fn, "__module__", None) or getattr(python_function, "__module__", None) or ""
    return module, qualname


def trace_started(name: str, python_function, cache, owner=None) -> dict:
    """A tf.function trace begins (its name, Python function, cache of concrete functions and the object that
    holds the cache): count it, nest it. Returns the instance's entry, for trace_ended; nothing given is kept."""
    with _LOCK:
        entry = _LIVE.get(id(cache))
        if entry is None or not _same(entry, owner):  # a new instance (or a freed one's id again)
            module, qualname = _describe(python_function)
            owner_name = owner_of(module, qualname)
            group = _GROUPS.setdefault((owner_name, module, qualname), {
                "owner": owner_name, "module": module, "function": qualname, "name": name, "instances": 0,
                "traces": 0, "paths": set()})
            group["instances"] += 1
            if len(_LIVE) + len(_RETIRED) >= _PRUNE["at"]:
                _prune()
            if entry is not None:
                _RETIRED.append(entry)  # a freed instance whose concrete functions may live on
            entry = {"group": group, "owners": [], "refs": []}
            _LIVE[id(cache)] = entry
        if owner is not None and not any(ref() is owner for ref in entry["owners"]):
            with contextlib.suppress(TypeError):  # an owner that takes no weak reference: the refs tell instead
                entry["owners"].append(weakref.ref(owner))
                entry["owned"] = True
        entry["group"]["traces"] += 1
    _stack().append(entry)
    return entry


def _same(entry: dict, owner) -> bool:
    """Whether a trace with this cache id is the instance `entry` counted: its owner still lives (the id cannot
    then be another cache's); without owners, one of its concrete functions lives, or it has made none yet."""
    if entry.get("owned"):
        return any(ref() is not None for ref in entry["owners"])
    return not entry["refs"] or _alive(entry) > 0


def trace_ended(entry: dict, concrete=None) -> None:
    """The trace of `entry` ended with `concrete`, the ConcreteFunction it made (None: it raised)."""
    stack = _stack()
    if stack and stack[-1] is entry:
        stack.pop()
    if concrete is not None:
        try:
            ref = weakref.ref(concrete)
        except TypeError:  # not TF's ConcreteFunction: nothing to follow
            return
        with _LOCK:
            entry["refs"].append(ref)


def _alive(entry: dict) -> int:
    return sum(ref() is not None for ref in entry["refs"])


def _live(entry: dict) -> bool:
    """Whether the instance lives: its owner, or (without one) a concrete function it made."""
    if entry.get("owned"):
        return any(ref() is not None for ref in entry["owners"])
    return _alive(entry) > 0


def _prune() -> None:
    """Drop the instances with nothing alive (owner and concrete functions gone), and the dead references of the
    others (with _LOCK held)."""
    tracing = {id(entry) for entry in _stack()}  # an instance in its first trace has no concrete function yet
    for entry in list(_LIVE.values()) + _RETIRED:
        entry["refs"] = [ref for ref in entry["refs"] if ref() is not None]
        entry["owners"] = [ref for ref in entry["owners"] if ref() is not None]
    for key, entry in list(_LIVE.items()):
        if not entry["refs"] and not entry["owners"] and id(entry) not in tracing:
            del _LIVE[key]
    _RETIRED[:] = [entry for entry in _RETIRED if entry["refs"]]
    _PRUNE["at"] = max(64, 2 * (len(_LIVE) + len(_RETIRED)))


def _stack() -> list:
    if not hasattr(_TRACING, "stack"):
        _TRACING.stack = []
    return _TRACING.stack


def mark_path(kind: str) -> None:
    """A train_step / predict_step is being traced: every function being traced around it is on that path."""
    path = PATHS.get(kind)
    if path:
        with _LOCK:
            for entry in _stack():
                entry["group"]["paths"].add(path)


def set_hook(state: str) -> None:
    """How the tracing hook stands: 'installed (…)', or why it is not (kerasbench._compat)."""
    _HOOK["state"] = state


def hook_state() -> str:
    return _HOOK["state"]


def add_child_functions(rows: list) -> None:
    """Count the functions a child process traced (its functions() rows) as this process's own (the child holds
    nothing now)."""
    with _LOCK:
        for r in rows:
            group = _GROUPS.setdefault((r["owner"], r["module"], r["function"]), {
                "owner": r["owner"], "module": r["module"], "function": r["function"], "name": r["name"],
                "instances": 0, "traces": 0, "paths": set()})
            group["instances"] += r["instances"]
            group["traces"] += r["traces"]
            group["paths"] |= set(r["paths"])


def all_traces() -> int:
    """Traces of every tf.function so far in this process (and its isolated children); on JAX, of every jitted
    function (jaxpr traces: JAX tells no function apart, so no per-function rows)."""
    with _LOCK:
        return sum(g["traces"] for g in _GROUPS.values()) + compilations("jax_trace")


def path_traces(path: str) -> int:
    """Traces of the functions on `path` ('train' or 'predict'): those that traced a train_step / predict_step."""
    with _LOCK:
        return sum(g["traces"] for g in _GROUPS.values() if path in g["paths"])


def functions() -> list:
    """Every traced function, grouped by (owner, module, qualname): instances, traces, the instances alive now
    (live), the concrete functions they made that are alive now (held: in the function's cache or anywhere else),
    and the paths; most traces first."""
    with _LOCK:
        held = {id(g): [0, 0] for g in _GROUPS.values()}
        for entry in list(_LIVE.values()) + _RETIRED:
            counts = held[id(entry["group"])]
            counts[0] += _live(entry)
            counts[1] += _alive(entry)
        rows = [{**g, "paths": sorted(g["paths"]), "live": held[id(g)][0], "held": held[id(g)][1]}
                for g in _GROUPS.values()]
    return sorted(rows, key=lambda g: (-g["traces"], g["owner"], g["function"]))
