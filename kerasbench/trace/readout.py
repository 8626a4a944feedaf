"""The trace as text: what `run` prints after its table for every traced record (the line to act on first, the
containers and what holds the objects that grow, the user's lines, the sites, the types, the native sites), and
where_text, the few lines of a failing test's message."""

from __future__ import annotations

import linecache
import os
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .frames import _harness_frame, _kerasbench_file, harness_file
from .records import Trace, record_trace


def _short(path: str, width: int = 90) -> str:
    for marker in ("site-packages/", "lib/python"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return path if len(path) <= width else "…" + path[-(width - 1):]


def _kib(v: float) -> str:
    return f"{v / 1024:+,.1f} KiB"


def text(records: Sequence[Dict[str, Any]]) -> str:
    """What `run` prints after its table for every traced record: the user's lines the growth goes through and what
    holds the objects that grow (records before them lack both), top sites, growing types, native sites."""
    out = []
    for record in records:
        trace = record_trace(record)
        if not trace:
            continue
        from ..console import loop_label, strategy_label

        out.append(f"\ntrace of {loop_label(record)} × {strategy_label(record)} (tracemalloc and gc, iteration "
                   f"{trace.get('first', 0)} → {trace.get('last', '?')}):")
        if trace.get("skipped"):
            out.append(f"  not traced: {trace['skipped']}")
            continue
        out.append(f"  Python heap growth {_kib(trace['python_bytes_per_iter'])}/iteration; trace cost "
                   f"{trace['seconds_in_loop']:.2f} s in the loop, {trace['seconds_after']:.2f} s after it")
        kept = _kept_names(trace)
        out += _lead_text(trace, kept) + _containers_text(trace) + _holders_text(trace) + _user_text(trace, kept)
        out.append("  Python allocation sites that grow (per iteration; kerasbench's own left out):")
        sites = [s for s in trace["python_sites"] if not harness_file(s["site"])]  # a record of an older worker
        for s in sites:
            out.append(f"    {_kib(s['bytes_per_iter']):>14} {s['count_per_iter']:+9.1f} blocks  {_short(s['site'])}")
            for frame in [f for f in s["stack"][1:] if not _kerasbench_file(f)]:
                out.append(f"    {'':>14} {'':>16}    ← {_short(frame)}")
        if not sites:
            out.append("    none outside kerasbench's own")
        out.append("  object types that grow (per iteration):")
        out += [f"    {t['per_iter']:+9.1f}  {t['type']}" for t in trace["types"]] or ["    none"]
        if trace.get("native_sites"):
            out.append(f"  native sites ({trace.get('native_note')}; kerasbench's own left out):")
            for s in [s for s in trace["native_sites"] if not _harness_frame(s["site"])]:
                out.append(f"    {_kib(s['bytes_per_iter']):>14} {s['count_per_iter']:+9.1f} allocs  "
                           f"{_short(s['site'])}")
        else:
            out.append(f"  native sites: n/a ({trace.get('native_note')})")
        out += _capture_text(trace)
    return "\n".join(out) + ("\n" if out else "")


def _capture_text(trace: Trace) -> List[str]:
    """Where memray's capture of the traced window is kept, and the command that draws it."""
    path = trace.get("native_file")
    if not path:
        return []
    if not os.path.exists(path):
        return [f"  memray's capture was {path} (no longer there)"]
    import shlex

    return [f"  memray's capture of the window, kept: memray flamegraph {shlex.quote(path)}  (or memray summary, "
            "table, tree; --leaks for what was still alive at its end)"]


_NAMED = re.compile(r"`([^`]+)`")
# A line that puts an object into a container it names: `kept.append(x)`, `kept[k] = x`, `kept += [x]`, ...
_KEEPS = r"\b{name}\s*(?:\.\s*(?:append|extend|insert|add|update|setdefault|appendleft)\s*\(|\[[^\]]*\]\s*=[^=]|\+=)"


def _kept_names(trace: Trace) -> List[Tuple[str, str, Dict[str, Any]]]:
    """(name, the file it lives in or '', holder) of each rooted chain's names that a line of code can use to keep
    an object: the module global (`histories`), the attributes and keys on the way; the type that grows most first."""
    names = []
    for h in trace.get("holders") or ():
        if not h.get("rooted"):
            continue
        for link in h.get("held_by") or ():
            found = _NAMED.search(link)
            if found:
                where = link.rsplit(" in ", 1)[1] if link.startswith("module global ") and " in " in link else ""
                names.append((found.group(1).rsplit(".", 1)[-1], where, h))
    for c in trace.get("containers") or ():  # then a container that grows: its own name (the last its chain says),
        found = _NAMED.findall(c["held_by"][0]) if c.get("rooted") and c.get("held_by") else []  # for what the gc
        if found:  # does not track (a type's holder says more where one grew: Box ×6 kept in `boxes`)
            names.append((found[-1].rsplit(".", 1)[-1], "", c))
    return names


def _source(site: str) -> str:
    path, _, line = site.rpartition(":")
    return linecache.getline(path, int(line)).strip() if line.isdigit() else ""


def _names_in(source: str, kept: List[Tuple[str, str, Dict[str, Any]]]) -> Optional[Tuple[str, str, Dict[str, Any]]]:
    """The first of `kept` whose name `source` uses as a word."""
    return next((k for k in kept if re.search(rf"\b{re.escape(k[0])}\b", source)), None)


def _keeping_lines(trace: Trace, kept: List[Tuple[str, str, Dict[str, Any]]]) -> List[Tuple[str, str, str]]:
    """(file:line, source, name) of the lines of the user's files that put an object into a container a holder chain
    names (`histories.append(...)`): the user sites' files, searched; at most three."""
    files = []
    for s in trace.get("user_sites") or ():
        path = s["site"].rpartition(":")[0]
        if path not in files:
            files.append(path)
    found = []
    for name, where, _ in kept:
        pattern = re.compile(_KEEPS.format(name=re.escape(name)))
        for path in files:
            if where and os.path.basename(path) != where:
                continue
            for n, text in enumerate(linecache.getlines(path), 1):
                match = pattern.search(text.split("#", 1)[0])
                before = text[:match.start()] if match else ""
                if match and before.count('"') % 2 == 0 and before.count("'") % 2 == 0:  # code, not a string's text
                    found.append((f"{path}:{n}", text.strip(), name))
        if found:
            break
    return found[:3]


def _lead_text(trace: Trace, kept: List[Tuple[str, str, Dict[str, Any]]]) -> List[str]:
    """One line to act on first: what holds a type that grows (the one that grows most, of those a line of the
    user's files adds to its holder) and that line; nothing when no such line is found."""
    lines = _keeping_lines(trace, kept)
    if not lines:  # a chain no line of the user's adds to (a class attribute of a library) is not where to look
        return []
    name = lines[0][2]
    holder = next(h for n, _, h in kept if n == name)
    where = "; ".join(f"{_short(site)} `{source if len(source) <= 60 else source[:59] + '…'}`"
                      for site, source, _ in lines)
    if "type" not in holder:  # a container that grows: what it gains
        return [f"  look first: `{name}`, {_container_text(holder)}, by {where}"]
    kind = holder["type"].rsplit(".", 1)[-1]
    return [f"  look first: {kind} ×{holder['alive']} ({holder['per_iter']:+.1f}/iteration) kept in `{name}`, by "
            f"{where}"]


def _container_text(c: Dict[str, Any]) -> str:
    """'a list, +1.0 item per iteration (len 9), holding numpy.ndarray (+200.0 KiB per iteration)'."""
    article = "an" if c["kind"][:1] in "aeiou" else "a"
    items = " or ".join(c["items"]) or "nothing sampled"
    return (f"{article} {c['kind']}, {c['per_iter']:+.1f} item{'s' if c['per_iter'] >= 1.5 else ''} per iteration "
            f"(len {c['len']}), holding {items} ({_kib(c['bytes_per_iter'])} per iteration)")


def _containers_text(trace: Trace) -> List[str]:
    """The containers that grow, the holder named first: 'module `foo` global `kept`: a list, +1.0 item per
    iteration (len 9), holding numpy.ndarray (+200.0 KiB per iteration)'; nothing where none grew (or the record
    is older than them)."""
    if not trace.get("containers"):
        return []
    out = ["  containers that grow (an item an iteration or more; they hold what the gc does not track, e.g. arrays):"]
    for c in trace["containers"]:
        held = " ← ".join(c["held_by"]) + ("" if c["rooted"] else " ← … (not followed further)")
        out.append(f"    {held}: {_container_text(c)}")
    return out


def where_text(record: Dict[str, Any], top: int = 3) -> List[str]:
    """Where a traced record's growth is, in a few lines: the line to act on, what holds the growing objects, the
    user's first `top` lines (a failing test's message); [] for a record without a trace."""
    trace = record_trace(record)
    if not trace or trace.get("skipped"):
        return []
    kept = _kept_names(trace)
    return _lead_text(trace, kept) + _containers_text(trace) + _holders_text(trace) + _user_text(trace, kept, top)


def _user_text(trace: Trace, kept: Optional[List[Tuple[str, str, Dict[str, Any]]]] = None,
               top: Optional[int] = None) -> List[str]:
    """The user's lines: those that name what holds the growing objects first, then by growth; each with its source
    (where the file is readable here), the library call it made and where that path allocated."""
    if "user_sites" not in trace:
        return []
    if not trace["user_sites"]:
        return [f"  your code: none of the growth goes through it (within the {trace.get('frames', '?')} frames kept "
                "per allocation)"]
    out = ["  your code that the growth goes through (each allocation at its innermost line in your files, per "
           "iteration; lines that name what holds them first):"]
    sites = sorted(trace["user_sites"], key=lambda s: _names_in(_source(s["site"]), kept or []) is None)
    for s in sites[:top]:
        out.append(f"    {_kib(s['bytes_per_iter']):>14} {s['count_per_iter']:+9.1f} blocks  {_short(s['site'])}")
        source = _source(s["site"])
        if source:
            named = _names_in(source, kept or [])
            tail = f"   ← names `{named[0]}`, which holds them" if named else ""
            out.append(f"    {'':>14} {'':>16}    {source if len(source) <= 90 else source[:89] + '…'}{tail}")
        calls = s["stack"][1:]
        for i, frame in enumerate(calls):
            how = "calls" if i == 0 and len(calls) == 2 else "allocates at"
            out.append(f"    {'':>14} {'':>16}    → {how} {_short(frame)}")
    return out


def _holders_text(trace: Trace) -> List[str]:
    """What holds the objects that grow, one line per type: 'History ×40 (+1.0/iteration) held by list (len 40) ← …'."""
    if "holders" not in trace:
        return []
    if not trace["holders"]:
        return ["  what holds the objects that grow: no GC-tracked type grew" +
                (" (the containers above hold what grows)" if trace.get("containers") else "")]
    out = ["  what holds the objects that grow (referrers of the newest few of a type, at the loop's end):"]
    for h in trace["holders"]:
        held = " ← ".join(h["held_by"]) + ("" if h["rooted"] else " ← … (not followed further)")
        if not h["held_by"]:
            held = "no referrer the gc tracks (a frame or C code holds them)"
        agree = f" [{h['agree']} of {h['sampled']} sampled]" if h["agree"] < h["sampled"] else ""
        kind = h["type"].rsplit(".", 1)[-1]  # the class's name: the record has its module
        out.append(f"    {kind} ×{h['alive']} ({h['per_iter']:+.1f}/iteration) held by {held}{agree}")
    return out
