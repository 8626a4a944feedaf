"""What holds the objects that grow: the referrers of the newest few of each growing type, followed up to a module
global or a class (gc.get_referrers, bounded in levels, objects and seconds), each chain in words."""

from __future__ import annotations

import gc
import os
import time
import types
from collections import Counter, deque
from typing import AbstractSet, Any, Dict, List, Optional, Tuple

from .frames import _user_type


# What holds the growing objects (kerasbench.trace.holders), bounded: it runs once, after the loop.
HOLDER_TYPES = 3  # growing types whose holders are shown
HOLDER_CANDIDATES = 24  # growing types whose newest object is followed, to choose them
HOLDER_SAMPLES = 3  # objects followed per type, the newest
HOLDER_DEPTH = 6  # referrer levels followed up towards a module global
HOLDER_BRANCH = 4  # referrers followed per object and level
HOLDER_FRONTIER = 48  # objects whose referrers one level asks for (gc.get_referrers is linear in them)
HOLDER_SECONDS = 10.0  # after this, what was found so far


def holders(grown: List[Dict[str, Any]], alive: Counter, deadline: float) -> List[Dict[str, Any]]:
    """What holds the objects of up to HOLDER_TYPES growing types: the referrers of the newest few of each, followed
    up to a module global (or a class), e.g. `list (len 40) ← module global `histories` in repro.py`.

    Which types: a fit loop that keeps its History grows by ~20 types once per iteration (the History, its model,
    the model's layers, optimizer, graph), and which of them the user keeps shows only in their chains. So a first
    pass follows the newest object of up to HOLDER_CANDIDATES types that grew once per iteration or more (the
    user's classes first, then other classes, the fewest per iteration first; where no class grew, dict, list and
    their like, the most first), and keeps the types whose chains are most direct: the user's first, then those
    that reach a module global or a class, the shortest first. A second pass follows HOLDER_SAMPLES objects of
    each: their most common chain, and how many share it. Bounded (HOLDER_* levels, objects, seconds): it runs
    once, after the loop; gc.get_referrers scans every object once per level.
    """
    per_iter = {g["type"]: g["per_iter"] for g in grown  # once per iteration and up: no one-off, nor the trace's own
                if g["per_iter"] >= 0.99 and not g["type"].startswith(("tracemalloc.", "weakref."))}
    newest = _newest(per_iter)
    user = {name: _user_type(type(kept[0])) for name, kept in newest.items()}
    classes = sorted((not user[n], per_iter[n], n) for n in newest if not n.startswith(_PLAIN))
    plain = sorted((-per_iter[n], n) for n in newest if n.startswith(_PLAIN))  # the bulk: no class grew
    candidates = [key[-1] for key in classes or plain][:HOLDER_CANDIDATES]
    started = time.perf_counter()
    lists = {id(newest)} | {id(kept) for kept in newest.values()}  # they hold the samples too: not holders
    first = [(tuple(_describe(chain)), rooted) for chain, rooted in
             _paths([newest[name][-1] for name in candidates], deadline, lists)]
    order = sorted(range(len(candidates)),
                   key=lambda i: (not user[candidates[i]], not first[i][1], len(first[i][0]), i))[:HOLDER_TYPES]
    chosen = [candidates[i] for i in order]
    chains: Dict[str, List[Tuple[Tuple[str, ...], bool]]] = {name: [first[i]] for name, i in zip(chosen, order)}
    if time.perf_counter() + (time.perf_counter() - started) < deadline:  # time for the second pass
        samples, owners = [], []
        for name in chosen:
            samples += newest[name]
            owners += [name] * len(newest[name])
        del newest  # nothing but `samples` holds them now
        chains = {name: [] for name in chosen}
        for (chain, rooted), owner in zip(_paths(samples, deadline), owners):
            chains[owner].append((tuple(_describe(chain)), rooted))
        del samples
    out = []
    for name in chosen:
        (held_by, rooted), agree = Counter(chains[name]).most_common(1)[0]
        out.append({"type": name, "per_iter": per_iter[name], "alive": alive[name], "sampled": len(chains[name]),
                    "agree": agree, "held_by": list(held_by), "rooted": rooted})
    return out


# The interpreter's own containers and plumbing: they hold what grows (or point at it) and are never the cause.
_PLAIN = ("builtins.", "weakref.", "_weakref.", "collections.", "functools.", "types.")


def _newest(per_iter: Dict[str, float]) -> Dict[str, List[Any]]:
    """The last HOLDER_SAMPLES objects of each growing type in gc's order (the newest, after a collection)."""
    names: Dict[type, Optional[str]] = {}
    newest: Dict[str, List[Any]] = {}
    for obj in gc.get_objects():
        t = type(obj)
        if t not in names:
            name = f"{t.__module__}.{t.__qualname__}"
            names[t] = name if name in per_iter else None
        if names[t]:
            kept = newest.setdefault(names[t], [])
            kept.append(obj)
            if len(kept) > HOLDER_SAMPLES:
                del kept[0]
    return newest


def _module_globals(obj: Any) -> bool:
    return isinstance(obj, dict) and "__builtins__" in obj and "__name__" in obj


def _paths(samples: List[Any], deadline: float, own: AbstractSet[int] = frozenset()) -> List[Tuple[List[Any], bool]]:
    """For each sample: (its chain [sample, holder, holder's holder, …], whether it ends at a module's globals or a
    class). Breadth first, the shortest such chain; without one, the first chain to the deepest level reached.
    One gc.get_referrers scan per level serves every sample; frames, the containers whose ids are in `own` and what
    this function holds itself (its lists, the scan's arguments and result) are no holders."""
    objs = list(samples)  # every object reached, once per sample that reached it
    parent: List[Optional[int]] = [None] * len(objs)  # parent[n]: the index of the object objs[n] holds
    origin, depth = list(range(len(objs))), [0] * len(objs)
    seen = [{id(o)} for o in samples]
    root: List[Optional[int]] = [None] * len(samples)
    deepest = list(range(len(samples)))
    frontier = list(range(len(objs)))
    per_sample = max(2, HOLDER_FRONTIER // max(1, len(samples)))
    for _ in range(HOLDER_DEPTH):
        if not frontier or time.perf_counter() > deadline:
            break
        held = _referrers({id(objs[n]): objs[n] for n in frontier}, {id(objs), id(samples), *own})
        nxt: List[int] = []
        for n in frontier:
            s = origin[n]
            for r in sorted(held.get(id(objs[n]), ()), key=_preference)[:HOLDER_BRANCH]:
                if root[s] is not None or id(r) in seen[s]:
                    continue
                seen[s].add(id(r))
                objs.append(r)
                parent.append(n)
                origin.append(s)
                depth.append(depth[n] + 1)
                m = len(objs) - 1
                if _root(r):
                    root[s] = m
                elif depth[m] > depth[deepest[s]]:
                    deepest[s] = m
                nxt.append(m)
        del held
        taken = Counter()
        frontier = []
        for m in nxt:
            s = origin[m]
            if root[s] is None and taken[s] < per_sample:
                taken[s] += 1
                frontier.append(m)
    paths = []
    for s in range(len(samples)):
        chain, n = [], root[s] if root[s] is not None else deepest[s]
        while n is not None:
            chain.append(objs[n])
            n = parent[n]
        paths.append((chain[::-1], root[s] is not None))
    return paths


def _referrers(targets: Dict[int, Any], own: set) -> Dict[int, List[Any]]:
    """id(target) -> the objects that refer to it, from one scan of every object the gc tracks."""
    args = tuple(targets.values())  # passed as is: the scan finds it, and leaves it out
    refs = gc.get_referrers(*args)
    own = own | {id(args), id(refs), id(targets)}
    held: Dict[int, List[Any]] = {}
    for r in refs:
        if id(r) in own or isinstance(r, types.FrameType):
            continue
        for x in gc.get_referents(r):
            if id(x) in targets:
                held.setdefault(id(x), []).append(r)
    return held


def _root(obj: Any) -> bool:
    return _module_globals(obj) or isinstance(obj, type)


def _preference(obj: Any) -> int:
    """Which referrers to follow first: a module's globals or a class (where a chain ends), containers, objects,
    closures and methods last."""
    if _root(obj):
        return 0
    if isinstance(obj, (list, dict, tuple, set, frozenset, deque)):
        return 1
    if isinstance(obj, (types.CellType, types.FunctionType, types.MethodType)):
        return 3
    return 2


def _describe(chain: List[Any]) -> List[str]:
    """Each link of a chain, the holder first: 'list (len 40)', 'attribute `model` of History', 'module global
    `histories` in repro.py'. An object's __dict__ and a function's closure cell fold into their owner."""
    links, i = [], 1
    while i < len(chain):
        holder, child = chain[i], chain[i - 1]
        owner = chain[i + 1] if i + 1 < len(chain) else None
        if isinstance(holder, dict) and owner is not None and not _module_globals(holder) and _dict_of(owner, holder):
            links.append(_link(owner, child, _key(holder, child)))
            i += 2
        elif isinstance(holder, types.CellType) and isinstance(owner, types.FunctionType):
            names = owner.__code__.co_freevars
            name = next((n for n, c in zip(names, owner.__closure__ or ()) if c is holder), "?")
            links.append(f"closure variable `{name}` of function {owner.__qualname__}")
            i += 2
        else:
            links.append(_link(holder, child))
            i += 1
    return links


def _dict_of(owner: Any, d: dict) -> bool:
    """Whether `d` is `owner`'s __dict__ (a class's: the dict its mappingproxy shows)."""
    try:
        if isinstance(owner, type):
            return any(r is d for r in gc.get_referents(owner))
        return getattr(owner, "__dict__", None) is d
    except Exception:  # proxies (wrapt's, TF's) may raise on attribute reads
        return False


def _key(d: dict, child: Any) -> str:
    for k, v in list(d.items()):
        if v is child:
            return str(k)[:40]
    return "(as a key)"


def _attribute(obj: Any, child: Any) -> Optional[str]:
    """The name under which `obj` holds `child` (an attribute or a slot), if it is one."""
    try:
        for k, v in list(vars(obj).items()):
            if v is child:
                return str(k)
        for cls in type(obj).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if getattr(obj, slot, None) is child:
                    return slot
    except Exception:  # no __dict__, or a proxy that raises
        pass
    return None


def _link(holder: Any, child: Any, attribute: Optional[str] = None) -> str:
    kind = type(holder).__qualname__
    if _module_globals(holder):
        where = os.path.basename(holder.get("__file__") or "") or holder.get("__name__")
        return f"module global `{_key(holder, child)}` in {where}"
    if isinstance(holder, dict):
        return f"dict (len {len(holder)}) key {_key(holder, child)}"
    if isinstance(holder, (list, tuple, set, frozenset, deque)):
        return f"{kind} (len {len(holder)})"
    attribute = attribute or _attribute(holder, child)
    if isinstance(holder, type):
        return f"class attribute `{holder.__qualname__}.{attribute}`" if attribute else f"class {holder.__qualname__}"
    return f"attribute `{attribute}` of {kind}" if attribute else kind
