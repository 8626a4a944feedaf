"""Whose code a frame's file is: the user's (a repro file, their own modules), kerasbench's harness (its probes,
worker, runner, this trace: left out of what a trace shows), the stdlib or an installed library's."""

from __future__ import annotations

import functools
import os
import re
import sys
import sysconfig
from typing import Tuple


_KERASBENCH = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep  # the package
_EXAMPLES = os.path.join(_KERASBENCH, "examples") + os.sep  # repro files: the user's code when run
_LIBRARY_DIRS = ("site-packages", "dist-packages")


# kerasbench's files wherever the package sits (a checkout, site-packages, a worker's cache copy): by their path, for
# a record read where its worker's copy is not this one; its examples are repro files, the user's code when run.
_KERASBENCH_PATH = re.compile(r"(?:^|[/\\])kerasbench[/\\](?!examples[/\\])(?:[\w.-]+[/\\])*[\w.-]+\.py(?::\d+)?$")
_WORKLOAD = ("loops.py",)  # the loop shapes kerasbench measures: a control's leak is there, and named


@functools.lru_cache(maxsize=None)
def _kerasbench_file(filename: str) -> bool:
    """Whether a file (or 'file:line') is kerasbench's own code, not its examples: this copy, or any by its path."""
    path = filename.rsplit(":", 1)[0] if re.search(r":\d+$", filename) else filename
    real = os.path.realpath(path) if path and not path.startswith("<") else ""
    return bool(real.startswith(_KERASBENCH) and not real.startswith(_EXAMPLES) or _KERASBENCH_PATH.search(filename))


_PLUMBING = ("<frozen runpy>",)  # how the worker runs: no caller a user reads


def _library(filename: str) -> bool:
    """The stdlib's or the interpreter's frozen modules: not what asked for memory, what it asked through."""
    return filename.startswith("<frozen ") or os.path.realpath(filename).startswith(_stdlib())


def _harness_frame(frame: str) -> bool:
    """Whether a native frame ('function file:line') is in kerasbench's harness."""
    return harness_file(frame.rsplit(" ", 1)[-1])


def harness_file(filename: str) -> bool:
    """Whether a file is kerasbench's harness (its probes, worker, runner, trace): its own frames, which a user
    reading where memory grows has nothing to do with; the loop shapes (loops.py) are the workload measured."""
    path = filename.rsplit(":", 1)[0] if re.search(r":\d+$", filename) else filename
    return _kerasbench_file(filename) and os.path.basename(path) not in _WORKLOAD


@functools.lru_cache(maxsize=None)
def _stdlib() -> Tuple[str, ...]:
    paths = {sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib"), os.path.dirname(os.__file__)}
    return tuple(os.path.realpath(p) + os.sep for p in paths if p)


@functools.lru_cache(maxsize=None)
def user_code(filename: str) -> bool:
    """Whether a frame's file is the user's: a repro file or their own module, not `<frozen …>`-like code, the
    stdlib, an installed package (site-packages, dist-packages) or kerasbench (but for its example repros)."""
    if not filename or filename.startswith("<"):
        return False
    if any(d in filename.replace("\\", "/").split("/") for d in _LIBRARY_DIRS):
        return False
    path = os.path.realpath(filename)
    if path.startswith(_stdlib()):
        return False
    return not _kerasbench_file(filename)


def _user_type(t: type) -> bool:
    """Whether a class is the user's: defined in user code, or in a script that is no module any more (a repro
    file runs as `kerasbench_repro`, then leaves sys.modules)."""
    module = sys.modules.get(t.__module__)
    if module is None:
        return "." not in t.__module__ and t.__module__ != "builtins"
    path = getattr(module, "__file__", None)
    return user_code(path) if path else t.__module__ == "__main__"
