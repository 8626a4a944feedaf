"""Bring your own repro: a user's loop body in a Python file, measured like a built-in loop shape.

The contract (see examples/predict_loop.py and the README):

    def setup():             # optional: runs once per process, before warm-up; returns a context
        ...                  # (data, paths, anything) handed to build and iteration
    def build(ctx):          # optional: returns a new model (strategies decide how often it runs)
        ...
    def iteration(ctx, model):   # required: one pass of the loop body; return what your code
        ...                      # would keep (a History, predictions) or None

Strategies compose around it exactly as around the built-in loops: `rebuild_no_clear` calls
build() every iteration and cleans nothing; `clear_session_del_gc` adds del + clear_session +
gc.collect; `reuse_model` builds once; `keep_outputs` keeps every return value; and so on.

The file is checked in the parent without running it (parse only: the parent never imports
TensorFlow); it is executed in the worker, the measured process.
"""

from __future__ import annotations

import ast
import os
import runpy
from typing import Any

from .errors import UsageError
from .files import SOURCE_LIMIT, read_bytes

HOOKS = {  # name: (required, positional parameters)
    "setup": (False, 0),
    "build": (False, 1),
    "iteration": (True, 2),
}
SEE = "see the README, 'Bring your own repro'"


def check(path: str) -> str:
    """The absolute path of a readable repro file that defines the contract; UsageError otherwise."""
    source = source_text(path)
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as e:
        where = f" (line {e.lineno})" if e.lineno else ""
        raise UsageError(f"Repro file {path} is not valid Python: {e.msg}{where}.") from None
    except (RecursionError, MemoryError) as e:  # a huge or deeply nested expression: the parser's stack runs out
        raise UsageError(f"Repro file {path} cannot be parsed: an expression is too long or nested too deeply "
                         f"for Python's parser ({type(e).__name__}); split it up (a loop, a list built in steps).") \
            from None
    except ValueError as e:  # null bytes in the source (Python < 3.12)
        raise UsageError(f"Repro file {path} is not valid Python: {e}.") from None
    defined = _top_level_names(tree)
    for name, (required, arity) in HOOKS.items():
        node = defined.get(name)
        if node is None:
            if required:
                raise UsageError(f"Repro file {path} does not define {name}(ctx, model), "
                                 f"the loop body to repeat; {SEE}.")
            continue
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue  # bound some other way (imported, assigned from a call): only running it can tell
        if isinstance(node, ast.AsyncFunctionDef) or not _accepts(node.args, arity):
            signature = {0: "setup()", 1: "build(ctx)", 2: "iteration(ctx, model)"}[arity]
            raise UsageError(f"Repro file {path}: {name} must be a plain function {signature}; {SEE}.")
    return os.path.abspath(path)


def source_text(path: str) -> str:
    """The repro file `path` decoded as Python decodes it (PEP 263: its coding declaration, else UTF-8; tokenize's
    detect_encoding), the worker's runpy too; a one-line UsageError naming the encoding where it cannot be."""
    import io
    import tokenize

    data = read_bytes(path, "repro file", SOURCE_LIMIT)  # a regular file: a FIFO would hang here
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as e:  # no declaration and not UTF-8 (said below), an unknown coding, one against a BOM
        if not str(e).startswith("invalid or missing encoding declaration"):
            raise UsageError(f"Repro file {path} cannot be read as Python source: {e}.") from None
        encoding = "utf-8"
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        declared = "declared" if encoding != "utf-8" or data.startswith(b"\xef\xbb\xbf") else "Python's default"
        raise UsageError(f"Repro file {path} is not {encoding} text ({declared} encoding; byte {e.start}): save it "
                         "as UTF-8, or declare its encoding on its first or second line (# -*- coding: latin-1 -*-)."
                         ) from None


def _top_level_names(tree: ast.Module) -> dict:
    """Each name the module binds at top level -> its last binding's node (a def, a lambda, or what else bound it)."""
    names: dict = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node.value
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = node
    return names


def _accepts(args, n):
    """Whether a function with these arguments can be called with n positional ones."""
    positional = len(args.posonlyargs) + len(args.args)
    required = positional - len(args.defaults)
    required_kwonly = sum(default is None for default in args.kw_defaults)
    return required <= n and (positional >= n or args.vararg is not None) and not required_kwonly


class ReproFile:
    """The file's hooks, executed in this (the measured) process (by the repro loop's runtime, loops.Repro)."""

    def __init__(self, path: str):
        namespace = runpy.run_path(path, run_name="kerasbench_repro")
        self.path = path
        self._setup = namespace.get("setup")
        self._build = namespace.get("build")
        self._iteration = namespace["iteration"]
        self.ctx = None

    def setup(self) -> None:
        """Run the file's setup() once, keeping what it returns as the context."""
        self.ctx = self._setup() if self._setup else None

    def build(self) -> Any:
        """The file's build(ctx): a new model, or None where the file defines no build."""
        return self._build(self.ctx) if self._build else None

    def iteration(self, model: Any) -> Any:
        """One pass of the file's loop body: iteration(ctx, model)."""
        return self._iteration(self.ctx, model)
