"""Trace and model counters of the measured process: bumped from traced Python bodies and model builds
(kerasbench._compat) or from isolated children's reports (kerasbench.worker), read by the trace probe.

Its own module so that _compat, which bumps them, and probes, which read them, need not import each other.
"""

import collections
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
# each trace. A function is one tf.function instance (its cache of concrete functions); the functions traced while
# it traces are nested in it, and a train_step / predict_step traced inside marks every function around it as being
# on the training / prediction path.


OWNERS = {  # module prefix of the traced Python function: who owns it
    "keras": "keras", "tf_keras": "keras", "tensorflow.python.data": "tf.data", "tensorflow": "tensorflow",
    "kerasbench": "loop",
}
PATHS = {"train_step": "train", "predict_step": "predict"}

_LOCK = threading.Lock()
_FUNCTIONS: list = []  # one dict per tf.function instance traced, in the order first traced
_BY_CACHE: dict = {}  # id of an instance's cache: its dict (the cache's weakref tells a reused id apart)
_TRACING = threading.local()  # .stack: the functions being traced in this thread, outermost first
_HOOK = {"state": "not installed"}


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


def trace_started(name: str, python_function, cache) -> dict:
    """A tf.function trace begins (its name, Python function and cache of concrete functions): count it, nest it."""
    with _LOCK:
        entry = _BY_CACHE.get(id(cache))
        if entry is None or entry["cache"]() is not cache:
            module, qualname = _describe(python_function)
            entry = {"name": name, "qualname": qualname, "module": module, "owner": owner_of(module, qualname),
                     "paths": set(), "traces": 0, "cache": _weak(cache)}
            _FUNCTIONS.append(entry)
            _BY_CACHE[id(cache)] = entry
        entry["traces"] += 1
    stack = _stack()
    stack.append(entry)
    return entry


def trace_ended(entry: dict) -> None:
    """The trace of `entry` ended (or raised)."""
    stack = _stack()
    if stack and stack[-1] is entry:
        stack.pop()


def _stack() -> list:
    if not hasattr(_TRACING, "stack"):
        _TRACING.stack = []
    return _TRACING.stack


def _weak(cache):
    try:
        return weakref.ref(cache)
    except TypeError:  # a cache that takes no weak reference: held for the process (counted, never freed)
        return lambda: cache


def mark_path(kind: str) -> None:
    """A train_step / predict_step is being traced: every function being traced around it is on that path."""
    path = PATHS.get(kind)
    if path:
        with _LOCK:
            for entry in _stack():
                entry["paths"].add(path)


def set_hook(state: str) -> None:
    """How the tracing hook stands: 'installed (…)', or why it is not (kerasbench._compat)."""
    _HOOK["state"] = state


def hook_state() -> str:
    return _HOOK["state"]


def _held(entry: dict) -> int:
    cache = entry["cache"]()
    if cache is None:
        return 0
    try:
        return len(cache.values())
    except Exception:  # an internal that changed: counted as unknown, never fatal
        return -1


_CHILDREN: list = []  # functions() rows isolated children reported (process_isolation)


def add_child_functions(rows: list) -> None:
    """Count the functions a child process traced (its functions() rows) as this process's own."""
    with _LOCK:
        _CHILDREN.extend(dict(r, paths=set(r["paths"]), held=0, live=0) for r in rows)  # the child holds nothing now


def all_traces() -> int:
    """Traces of every tf.function so far in this process (and its isolated children)."""
    with _LOCK:
        return sum(e["traces"] for e in _FUNCTIONS) + sum(r["traces"] for r in _CHILDREN)


def path_traces(path: str) -> int:
    """Traces of the functions on `path` ('train' or 'predict'): those that traced a train_step / predict_step."""
    with _LOCK:
        return (sum(e["traces"] for e in _FUNCTIONS if path in e["paths"])
                + sum(r["traces"] for r in _CHILDREN if path in r["paths"]))


def functions() -> list:
    """Every traced function, grouped by (owner, module, qualname): instances, traces, concrete functions the live
    instances hold now, and the paths; most traces first."""
    groups: dict = {}
    with _LOCK:
        entries, children = list(_FUNCTIONS), list(_CHILDREN)
    for r in children:
        key = (r["owner"], r["module"], r["function"])
        g = groups.setdefault(key, {**r, "instances": 0, "traces": 0, "paths": set()})
        g["instances"] += r["instances"]
        g["traces"] += r["traces"]
        g["paths"] |= r["paths"]
    for e in entries:
        key = (e["owner"], e["module"], e["qualname"])
        g = groups.setdefault(key, {"owner": e["owner"], "module": e["module"], "function": e["qualname"],
                                    "name": e["name"], "instances": 0, "live": 0, "traces": 0, "held": 0,
                                    "paths": set()})
        g["instances"] += 1
        g["traces"] += e["traces"]
        held = _held(e)
        if e["cache"]() is not None:
            g["live"] += 1
        if held >= 0 and g["held"] >= 0:
            g["held"] += held
        else:
            g["held"] = -1
        g["paths"] |= e["paths"]
    rows = [{**g, "paths": sorted(g["paths"]), "held": g["held"] if g["held"] >= 0 else None}
            for g in groups.values()]
    return sorted(rows, key=lambda g: (-g["traces"], g["owner"], g["function"]))
