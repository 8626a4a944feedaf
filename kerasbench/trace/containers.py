"""Containers whose length grows (lists, dicts, sets, deques): they hold what the gc does not track (numpy arrays,
tensors' buffers, bytes), which no growing type names. Their lengths after the first measured iteration, those
that grew by the last, named where a module global reaches them, else by the chain of their holders."""

from __future__ import annotations

import gc
import itertools
import os
import sys
import types
from array import array
from collections import Counter, OrderedDict, defaultdict, deque
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .frames import user_code
from .referrers import _describe, _module_globals, _paths


# Containers whose length grows (kerasbench.trace.containers): they hold what the gc does not track (numpy arrays,
# tensors' buffers, bytes), which no growing type names.
# Exact types, read without calling Python code: isinstance would ask a proxy its __class__ (wrapt's, a lazy
# module's, which imports what it stands for: a trace that imported JAX into the loop it traced).
CONTAINER_TYPES = frozenset((list, dict, set, deque, OrderedDict, defaultdict))
CONTAINERS_SHOWN = 3
CONTAINER_MIN_BYTES = 1024  # per iteration, of the new items: below it, a growing list of floats (a counter's own
# readings) is no holder to show, unless a module global of the user's files holds it
CONTAINER_SAMPLE = 64  # new items whose size is read, per container
GLOBAL_ITEMS = 256  # a module global dict's values looked into for containers (module `m` global `d` key 'k')


def _own_module(module: Any) -> bool:
    """Whether a module is kerasbench's own (its probes, its runner), not the user's or a library's."""
    name = getattr(module, "__name__", "") or ""
    return name == "kerasbench" or name.startswith("kerasbench.") and not name.startswith("kerasbench.examples")


def _plain_vars(value: Any) -> Optional[Any]:
    """An object's or a class's own attributes (a mapping, not copied), where reading them runs no Python code (no
    __getattribute__ of its own, a __dict__ of the interpreter's): a proxy's or a lazy loader's reads import what
    they stand for."""
    kind = type(value)
    if kind is type:
        return value.__dict__
    if kind.__getattribute__ is not object.__getattribute__:
        return None
    slot = next((k.__dict__["__dict__"] for k in kind.__mro__ if "__dict__" in k.__dict__), None)
    if type(slot) is not types.GetSetDescriptorType:
        return None
    try:
        return object.__getattribute__(value, "__dict__")
    except AttributeError:
        return None


Reached = Tuple[Any, str, str, str, Any, bool]  # (container, the module's name for it, the global, how it is reached
# from the global, the key or attribute, whether the module is the user's)


def _namespaces(objects: Sequence[Any]) -> List[Tuple[str, bool, dict]]:
    """(the module's name for a line: its file's, a package's dotted name; whether it is the user's; its globals) of
    every plain module in sys.modules but kerasbench's, and of the user's functions' modules that are not there (a
    repro file runs as a module that leaves sys.modules): `objects` is gc.get_objects()."""
    out, seen = [], set()

    def add(name: str, path: str, namespace: dict) -> None:
        seen.add(id(namespace))
        base = os.path.basename(path) if path else ""
        mine = user_code(path) if path else name == "__main__"
        out.append((base if base and base != "__init__.py" else name, mine, namespace))

    for module in list(sys.modules.values()):
        if type(module) is types.ModuleType and not _own_module(module):  # noqa: E721 -- a subclass may be a lazy
            add(module.__name__, module.__dict__.get("__file__") or "", module.__dict__)  # loader: its reads import
    for obj in objects:
        if type(obj) is types.FunctionType and id(obj.__globals__) not in seen and user_code(obj.__code__.co_filename):
            add(str(obj.__globals__.get("__name__")), obj.__globals__.get("__file__") or obj.__code__.co_filename,
                obj.__globals__)
    return out


def _global_containers(objects: Sequence[Any]) -> List[Reached]:
    """The containers reachable from modules' globals (_namespaces; kerasbench's own left out): a global itself, a
    value of a global dict, an attribute of a global object, a class attribute, a closure variable of a global
    function; _reached_text names one. Dicts of untracked values (numpy arrays) are not GC-tracked: only this finds
    them. Types are compared exactly and attributes read only where no Python code runs (_plain_vars). It runs under
    tracemalloc, which walks the stack of every allocation: a tuple per container found, nothing named until one
    grew."""
    found: List[Reached] = []
    for where, mine, namespace in _namespaces(objects):
        try:
            for name, value in namespace.items():
                kind = type(value)
                if kind in CONTAINER_TYPES:
                    found.append((value, where, name, "", None, mine))
                    if kind is not list and kind is not set and kind is not deque and len(value) <= GLOBAL_ITEMS:
                        found += [(item, where, name, "key", key, mine) for key, item in value.items()
                                  if type(item) in CONTAINER_TYPES]
                elif kind is types.FunctionType and value.__closure__:
                    for n, cell in zip(value.__code__.co_freevars, value.__closure__):
                        try:
                            if type(cell.cell_contents) in CONTAINER_TYPES:
                                found.append((cell.cell_contents, where, name, "closure variable", n, mine))
                        except ValueError:  # an empty cell
                            pass
                elif kind is not types.ModuleType and kind not in _NO_ATTRIBUTES:
                    attributes = _plain_vars(value)
                    if attributes:
                        how = "class attribute" if kind is type else "attribute"
                        found += [(v, where, name, how, a, mine) for a, v in attributes.items()
                                  if type(v) in CONTAINER_TYPES]
        except RuntimeError:  # a module's globals changed while read (another thread imported): the others
            continue
    return found


_NO_ATTRIBUTES = frozenset((types.BuiltinFunctionType, types.MethodType, types.FunctionType, str, int, float, bool,
                            bytes, tuple, frozenset, type(None)))


def _reached_text(reached: Reached) -> str:
    """'module global `kept` in keeper.py' (as _link names one), '…, attribute `items`', '… key 'k''."""
    _, where, name, how, key, _ = reached
    head = f"module global `{name}` in {where}"
    if how == "key":
        return f"{head} key {str(key)[:40]!r}"
    return f"{head}, {how} `{key}`" if how else head


def container_lengths() -> Tuple[array, array]:
    """(ids, lengths) of the non-empty containers the gc tracks and of those reachable from modules' globals, after the
    first measured iteration (a container that grows by an item an iteration has one by then). Ids, not the objects:
    holding them would keep garbage alive; two arrays, 16 bytes a container, not a dict of them."""
    ids, lengths = array("Q"), array("q")
    objects = gc.get_objects()
    for obj in itertools.chain(objects, (r[0] for r in _global_containers(objects))):
        if type(obj) in CONTAINER_TYPES:
            n = len(obj)
            if n:
                ids.append(id(obj))
                lengths.append(n)
    return ids, lengths


def _new_items(obj: Any, grew: int) -> List[Any]:
    """A sample of what a container gained: a list's or deque's last items, a dict's last values (insertion order),
    some of a set's."""
    try:
        if type(obj) in (dict, OrderedDict, defaultdict):
            return list(itertools.islice(reversed(obj.values()), min(grew, CONTAINER_SAMPLE)))
        if type(obj) is set:
            return list(itertools.islice(iter(obj), min(grew, CONTAINER_SAMPLE)))
        return list(itertools.islice(reversed(obj), min(grew, CONTAINER_SAMPLE)))
    except RuntimeError:  # changed size while read (another thread)
        return []


def grown_containers(early: Optional[Tuple[array, array]], span: int) -> List[Dict[str, Any]]:
    """The containers that gained an item an iteration or more since `early` (container_lengths), the most bytes
    first: each with the container itself (for describe_containers, which drops it), its name where a module global
    reaches it, the type and size of what it gained. kerasbench's own (its modules, its frames' small readings) are
    left out: those reached from its modules are not scanned, and a growth of less than CONTAINER_MIN_BYTES an
    iteration counts only where a module global of the user's files holds the container."""
    if not early or span < 1:
        return []
    before = dict(zip(*early))
    objects = gc.get_objects()
    reached = _global_containers(objects)
    named = {id(r[0]): r for r in reversed(reached)}  # the first way a container is reached names it
    own = {id(early), id(early[0]), id(early[1]), id(before), id(named), id(reached), id(objects)}
    found, seen = [], set()
    for obj in itertools.chain(objects, (r[0] for r in reached)):
        key = id(obj)
        if key in seen or key in own or type(obj) not in CONTAINER_TYPES or key not in before:
            continue
        seen.add(key)
        grew = len(obj) - before[key]
        if grew < 0.99 * span:
            continue
        items = _new_items(obj, grew)
        sizes = [_size(x) for x in items]
        per_item = sum(sizes) / len(sizes) if sizes else 0.0
        way = named.get(key)
        mine, what = (way[5], _reached_text(way)) if way else (False, None)
        if per_item * grew / span < CONTAINER_MIN_BYTES and not mine:
            continue
        kinds = Counter(f"{type(x).__module__}.{type(x).__qualname__}".replace("builtins.", "") for x in items)
        found.append({"container": obj, "kind": type(obj).__qualname__, "len": len(obj), "per_iter": grew / span,
                      "bytes_per_iter": per_item * grew / span, "items": [k for k, _ in kinds.most_common(3)],
                      "name": what, "mine": mine})
    del before, named, reached, objects
    found.sort(key=lambda c: (not c["mine"], -c["bytes_per_iter"]))
    return found[:CONTAINERS_SHOWN]


def _size(obj: Any) -> int:
    try:
        if type(type(obj).__sizeof__) is types.FunctionType:  # Python code (a proxy's): the object's own shell
            return object.__sizeof__(obj)
        return sys.getsizeof(obj)  # a numpy array that owns its data counts it; a view or a list, its own shell
    except Exception:  # a proxy whose __sizeof__ raises
        return 0


def describe_containers(grown: List[Dict[str, Any]], deadline: float) -> List[Dict[str, Any]]:
    """The record's entries of grown_containers: a container no module global names gets the chain of its holders
    (as `holders` follows them, up to a module global or a class); the containers themselves are let go."""
    out = []
    for c in grown:
        obj = c.pop("container")
        if c["name"]:
            held_by, rooted = [c.pop("name")], True
        else:
            c.pop("name")
            (chain, rooted), = _paths([obj], deadline)
            held_by = _describe(chain)
            if rooted and held_by and held_by[-1].startswith("module global ") and _own_chain(chain):
                continue  # held from kerasbench's own module
        del obj
        c.pop("mine")
        out.append({**c, "held_by": held_by, "rooted": rooted})
    return out


def _own_chain(chain: List[Any]) -> bool:
    """Whether a chain ends at a kerasbench module's globals."""
    last = chain[-1] if chain else None
    return _module_globals(last) and _own_module(sys.modules.get(last.get("__name__", ""), None))
