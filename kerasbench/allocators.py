"""Allocators as a factor: which malloc the worker runs on, and how its RSS is read.

The allocator sets the noise of an RSS series: glibc keeps freed memory and saw-tooths by
megabytes, tcmalloc and glibc + malloc_trim(0) before each reading are quiet (docs/calibration.md).
The runner sets the worker's environment from this registry; the worker reports what it detected
(`allocator_in_use`). glibc's malloc_trim(0) lives here too: a cleanup action and a way to read RSS.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional

from .errors import UsageError, unknown

ENV_VAR = "KERASBENCH_ALLOCATOR"  # the asv axis (benchmarks/_common.py), like KERASBENCH_DEVICE
DEFAULT = "glibc"
LIBDIR = "/usr/lib/x86_64-linux-gnu"
# Variables an allocator may set: cleared from the inherited environment so that glibc means glibc.
CONTROLLED = ("MALLOC_ARENA_MAX",)


@dataclass(frozen=True)
class Allocator:
    """One malloc setup: a library to LD_PRELOAD (if any), variables, and how RSS is read."""

    name: str
    description: str
    detects: str  # what allocator_in_use() reports when this one is in use
    preload: str = ""  # shared library put first in LD_PRELOAD
    package: str = ""  # the Debian package that provides `preload`
    env: dict = field(default_factory=dict)
    trim_before_read: bool = False  # the worker calls malloc_trim(0) before each RSS reading


ALLOCATORS = {
    a.name: a
    for a in (
        Allocator("glibc", "the system malloc, as users run it", "glibc"),
        Allocator("glibc_trim", "glibc, with malloc_trim(0) before each RSS reading (in the worker)", "glibc",
                  trim_before_read=True),
        Allocator("glibc_arena2", "glibc with MALLOC_ARENA_MAX=2 (fewer per-thread arenas)", "glibc",
                  env={"MALLOC_ARENA_MAX": "2"}),
        Allocator("tcmalloc", "gperftools tcmalloc (minimal) via LD_PRELOAD", "tcmalloc",
                  preload=f"{LIBDIR}/libtcmalloc_minimal.so.4", package="libtcmalloc-minimal4"),
        # Without thread caches: jemalloc counts the free regions a thread caches as allocated, so with them its
        # stats.allocated moves as caches fill and flush (a 4 KiB/iteration leak read 2-3.4 KiB over 30-60)
        Allocator("jemalloc", "jemalloc 5 via LD_PRELOAD, thread caches off (an exact heap count)", "jemalloc",
                  preload=f"{LIBDIR}/libjemalloc.so.2", package="libjemalloc2", env={"MALLOC_CONF": "tcache:false"}),
    )
}


def get_allocator(name: str) -> Allocator:
    """The allocator called `name`, or a UsageError listing the valid names."""
    try:
        return ALLOCATORS[name]
    except KeyError:
        raise unknown("allocator", name, ALLOCATORS) from None


def library_present(path: str) -> bool:
    """Whether the shared library at `path` exists (tests monkeypatch this)."""
    return os.path.exists(path)


def require(name: str) -> Allocator:
    """The allocator called `name`, installed here; UsageError naming its Debian package otherwise."""
    a = get_allocator(name)
    if a.preload and not library_present(a.preload):
        raise UsageError(f"Allocator {name!r} is not installed: {a.preload} is missing. "
                         f"Install it with `apt-get install {a.package}`.")
    return a


def apply_env(name: str, env: dict) -> dict:
    """`env` (a dict, changed in place) set up for allocator `name`; other allocators' traces removed."""
    a = get_allocator(name)
    for key in CONTROLLED:
        env.pop(key, None)
    others = {b.preload for b in ALLOCATORS.values() if b.preload}
    kept = [p for p in env.get("LD_PRELOAD", "").split(":") if p and p not in others]
    preload = ([a.preload] if a.preload else []) + kept
    if preload:
        env["LD_PRELOAD"] = ":".join(preload)
    else:
        env.pop("LD_PRELOAD", None)
    for key, value in a.env.items():
        # jemalloc's MALLOC_CONF is a list of options, the last one winning: keep the user's, ours last
        env[key] = f"{env[key]},{value}" if key == "MALLOC_CONF" and env.get(key) else value
    return env


def allocator_in_use() -> str:
    """Which malloc this process runs on: 'tcmalloc', 'jemalloc' or 'glibc' (from /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return "unknown"
    for name in ("tcmalloc", "jemalloc"):
        if "lib" + name in maps:
            return name
    return "glibc"


_LIBC = None


def _malloc_trim_fn():
    global _LIBC
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        except OSError:
            _LIBC = False
    return getattr(_LIBC, "malloc_trim", None) if _LIBC else None


def malloc_trim_available() -> bool:
    """Whether this process's C library has malloc_trim (glibc)."""
    return _malloc_trim_fn() is not None


def malloc_trim() -> bool:
    """glibc malloc_trim(0): return free heap pages to the OS. Returns whether anything was freed."""
    fn = _malloc_trim_fn()
    return bool(fn(0)) if fn is not None else False


# Heap readers: bytes the allocator has handed out and not had back (what a leak grows), beside RSS
# (what the allocator holds from the OS, freed or not). Each allocator is read through its own API,
# found in this process by ctypes; where it cannot be read, the reader says why (never a silent 0).


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                      "fsmblks", "uordblks", "fordblks", "keepcost")]


@dataclass
class HeapReader:
    """How this process's heap bytes in use are read: `read()` gives bytes, or None with `unavailable` saying why."""

    source: Optional[str]  # what is read, e.g. "glibc mallinfo2 uordblks+hblkhd"; None when nothing can be
    unavailable: Optional[str] = None  # why it cannot be read
    _read: Optional[Callable[[], int]] = None

    def read(self) -> Optional[int]:
        """Bytes in use on the heap now, or None (see `unavailable`)."""
        return self._read() if self._read is not None else None


def _process_symbol(name: str):
    """The C function `name` as this process has it (LD_PRELOAD first), or None."""
    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None


def _glibc_reader() -> HeapReader:
    fn = _process_symbol("mallinfo2")
    if fn is None:
        return HeapReader(None, "glibc without mallinfo2 (glibc < 2.33; mallinfo's int fields wrap at 2 GiB)")
    fn.restype = _MallInfo2
    fn.argtypes = []

    def read() -> int:
        info = fn()
        return info.uordblks + info.hblkhd  # chunks in use in every arena, plus mmapped ones

    return HeapReader("glibc mallinfo2 uordblks+hblkhd", None, read)


def _jemalloc_reader() -> HeapReader:
    mallctl = _process_symbol("mallctl")
    if mallctl is None:
        return HeapReader(None, "jemalloc in use but no mallctl symbol (a prefixed build, e.g. je_mallctl)")
    mallctl.restype = ctypes.c_int
    mallctl.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p,
                        ctypes.c_size_t]
    epoch = ctypes.c_uint64(1)
    value = ctypes.c_size_t(0)
    size = ctypes.c_size_t(ctypes.sizeof(value))
    epoch_size = ctypes.c_size_t(ctypes.sizeof(epoch))
    epoch_ref, value_ref, size_ref, epoch_size_ref = (ctypes.byref(epoch), ctypes.byref(value), ctypes.byref(size),
                                                      ctypes.byref(epoch_size))

    def read() -> int:
        # stats are snapshots: bump the epoch to refresh them, then read stats.allocated
        if mallctl(b"epoch", epoch_ref, epoch_size_ref, epoch_ref, ctypes.sizeof(epoch)) != 0:
            raise OSError("mallctl('epoch') failed")
        size.value = ctypes.sizeof(value)
        if mallctl(b"stats.allocated", value_ref, size_ref, None, 0) != 0:
            raise OSError("mallctl('stats.allocated') failed (jemalloc built without --enable-stats?)")
        return value.value

    try:
        read()
    except OSError as e:
        return HeapReader(None, str(e))
    return HeapReader("jemalloc stats.allocated", None, read)


def _tcmalloc_reader() -> HeapReader:
    fn = _process_symbol("MallocExtension_GetNumericProperty")
    if fn is None:
        return HeapReader(None, "tcmalloc in use but no MallocExtension_GetNumericProperty symbol")
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t)]
    value = ctypes.c_size_t(0)
    ref = ctypes.byref(value)

    def read() -> int:
        if not fn(b"generic.current_allocated_bytes", ref):
            raise OSError("tcmalloc has no generic.current_allocated_bytes")
        return value.value

    try:
        read()
    except OSError as e:
        return HeapReader(None, str(e))
    return HeapReader("tcmalloc generic.current_allocated_bytes", None, read)


HEAP_READERS: Dict[str, Callable[[], HeapReader]] = {
    "glibc": _glibc_reader,
    "jemalloc": _jemalloc_reader,
    "tcmalloc": _tcmalloc_reader,
}


def heap_reader(in_use: Optional[str] = None) -> HeapReader:
    """The heap reader of the allocator this process runs on (allocator_in_use(), or `in_use`)."""
    in_use = in_use or allocator_in_use()
    make = HEAP_READERS.get(in_use)
    if make is None:
        return HeapReader(None, f"no heap reader for allocator {in_use!r} (readers: {', '.join(HEAP_READERS)})")
    return make()
