"""The package's import graph has no cycle, counting imports inside functions too.

Every `import kerasbench.x`, `from kerasbench.x import y`, `from .x import y` and `from . import x` of a module
under kerasbench/ is an edge, wherever it stands in the file. The package's lazy exports (kerasbench.__getattr__
importing by name) are not edges: they are resolved on attribute access, after every module has loaded.
"""

from __future__ import annotations

import ast
import pathlib
import textwrap
from typing import Optional

ROOT = pathlib.Path(__file__).resolve().parent.parent


def module_names(package: pathlib.Path) -> dict:
    """{dotted module name: path} of every .py file under `package` (a package's own name for its __init__.py)."""
    names = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _targets(node: ast.AST, module: str, is_package: bool, modules: dict) -> set:
    """The modules of `modules` that one import statement in `module` names."""
    if isinstance(node, ast.Import):
        found = set()
        for alias in node.names:  # `import a.b.c` names a.b.c (the deepest of them that is a module here)
            parts = alias.name.split(".")
            prefixes = (".".join(parts[:i]) for i in range(len(parts), 0, -1))
            found |= {next((prefix for prefix in prefixes if prefix in modules), "")}
        return found - {""}
    if node.level:  # relative: from its own package (a package's __init__ is its own package)
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = package[: len(package) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    found = set()
    for alias in node.names:  # `from pkg import sub` names a submodule; `from mod import name` names the module
        if f"{source}.{alias.name}" in modules:
            found.add(f"{source}.{alias.name}")
        elif source in modules:
            found.add(source)
    return found


def import_graph(package: pathlib.Path) -> dict:
    """{module: set of modules of the same package it imports}, at any depth of the file (functions included)."""
    modules = module_names(package)
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges |= _targets(node, name, path.name == "__init__.py", modules)
        graph[name] = edges - {name}
    return graph


def find_cycle(graph: dict) -> Optional[list]:
    """One cycle of `graph` as [a, b, ..., a], or None."""
    state = dict.fromkeys(graph, "new")
    stack = []

    def visit(node: str) -> Optional[list]:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if state.get(nxt) == "new":
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if state[node] == "new":
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def longest_chain(graph: dict) -> list:
    """The longest chain of imports in an acyclic `graph` ([a, b, ..., leaf]: a imports b ...): its length is the
    graph's floors, how many modules a change at the bottom can rebuild above it."""
    height: dict = {}

    def up(node: str) -> int:
        if node not in height:
            height[node] = 1 + max((up(nxt) for nxt in graph.get(node, ())), default=0)
        return height[node]

    chain = [max(sorted(graph), key=up)] if graph else []
    while chain and graph.get(chain[-1]):
        chain.append(max(sorted(graph[chain[-1]]), key=up))
    return chain


# The package's floors, imports in functions and type-only ones counted: a module imports what it stands on, and the
# layers stay few (docs/layout.md's "layers"). Raise it only with a reason in the commit.
FLOORS = 16


def test_a_longest_chain_is_found_through_every_branch():
    graph = {"a": {"b", "c"}, "b": {"d"}, "c": {"e"}, "e": {"f"}, "d": set(), "f": set(), "g": {"a"}}
    assert longest_chain(graph) == ["g", "a", "c", "e", "f"]
    assert longest_chain({}) == [] and longest_chain({"x": set()}) == ["x"]


def test_the_import_graph_is_at_most_floors_high():
    chain = longest_chain(import_graph(ROOT / "kerasbench"))
    assert len(chain) <= FLOORS, f"{len(chain)} floors (at most {FLOORS}): " + " -> ".join(chain)


def test_kerasbench_has_no_import_cycle():
    graph = import_graph(ROOT / "kerasbench")
    # the graph counts imports inside functions too: run's command imports the session only when it runs
    assert "kerasbench.commands.run" in graph and "kerasbench.session" in graph["kerasbench.commands.run"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_only_the_cli_imports_the_commands():
    graph = import_graph(ROOT / "kerasbench")
    importers = {name for name, edges in graph.items() if not name.startswith("kerasbench.commands")
                 and any(e == "kerasbench.commands" or e.startswith("kerasbench.commands.") for e in edges)}
    assert importers == {"kerasbench.cli"}


# The analyses are pure: records, pins or series in, data or text out. Whatever they import, at any depth, never
# starts a worker (runner, worker), runs a session (session), makes an environment (environment, install), owns
# processes (procs) or asks the package index (releases, nightlies); their commands (kerasbench/commands/) do those.
ANALYSES = ("compare", "triage", "attribute", "ablate", "calibration", "overhead", "score", "stats", "rule", "versions",
            "public")
MACHINERY = ("runner", "worker", "session", "environment", "install", "procs", "releases", "nightlies")


def import_chain(graph: dict, start: str, targets: set) -> Optional[list]:
    """The shortest chain of imports [start, ..., target] from `start` to any of `targets`, or None."""
    came_from, queue = {start: None}, [start]
    for module in queue:  # breadth first: the first target reached is reached by a shortest chain
        if module in targets and module != start:
            chain = [module]
            while came_from[chain[-1]] is not None:
                chain.append(came_from[chain[-1]])
            return chain[::-1]
        for nxt in sorted(graph.get(module, ())):
            if nxt not in came_from:
                came_from[nxt] = module
                queue.append(nxt)
    return None


def _of(graph: dict, names: tuple) -> set:
    """The modules of `graph` that are kerasbench.<name> or inside the package of that name."""
    return {m for m in graph for n in names if m == f"kerasbench.{n}" or m.startswith(f"kerasbench.{n}.")}


def test_the_analyses_never_import_the_runner_sessions_environments_or_processes():
    graph = import_graph(ROOT / "kerasbench")
    analyses, machinery = _of(graph, ANALYSES), _of(graph, MACHINERY)
    assert {f"kerasbench.{n}" for n in ANALYSES + MACHINERY} <= set(graph)  # a module renamed: this list follows
    assert "kerasbench.rule.looks" in analyses  # the rule's package, every module of it
    found = [" -> ".join(chain) for chain in (import_chain(graph, m, machinery) for m in sorted(analyses)) if chain]
    assert not found, "an analysis imports the machinery:\n  " + "\n  ".join(found)
    # ... and the check sees such a chain where one is: the attribute command makes environments through it
    assert import_chain(graph, "kerasbench.commands.attribute", machinery)[:2] == [
        "kerasbench.commands.attribute", "kerasbench.environment"]


def test_an_import_chain_is_found_at_any_depth():
    graph = {"a": {"b"}, "b": {"c", "x"}, "c": {"d"}, "d": set(), "x": set()}
    assert import_chain(graph, "a", {"d"}) == ["a", "b", "c", "d"]
    assert import_chain(graph, "a", {"d", "x"}) == ["a", "b", "x"]  # the shortest
    assert import_chain(graph, "c", {"x"}) is None


def test_every_command_is_imported_plainly():
    """No command is loaded by name (importlib): the graph sees each one's edge, and through it its imports."""
    from kerasbench.commands import COMMANDS, module_name

    graph = import_graph(ROOT / "kerasbench")
    assert {module_name(name) for name in COMMANDS} == graph["kerasbench.commands"]
    assert "importlib" not in (ROOT / "kerasbench" / "commands" / "__init__.py").read_text()


def test_the_graph_counts_every_import_form(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "VERSION = 1\n",
        "a.py": "from . import b\n",
        "b.py": "def later():\n    from .c import thing\n",
        "c.py": "import pkg.d\n",
        "d.py": "from pkg.sub import e\n",
        "sub/__init__.py": "",
        "sub/e.py": "from .. import VERSION\nfrom ..a import x\n",
    }
    for name, text in files.items():
        (package / name).write_text(textwrap.dedent(text))
    graph = import_graph(package)
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": {"pkg.d"}, "pkg.d": {"pkg.sub.e"},
                     "pkg.sub": set(), "pkg.sub.e": {"pkg", "pkg.a"}}
    assert find_cycle(graph) == ["pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.sub.e", "pkg.a"]
    graph["pkg.sub.e"].discard("pkg.a")
    assert find_cycle(graph) is None


def test_the_rules_names_load_from_many_threads_at_once():
    """The runner watches its workers from threads, each asking the rule's namespace for the Decider: no name may
    read as missing in one thread while another loads it (CI saw `cannot import name 'Decider'` under the lazy
    loader the namespace had; its names are now imported with the package)."""
    import subprocess
    import sys

    script = textwrap.dedent("""
        import threading
        import kerasbench.rule as rule

        names = ["Decider", "judge", "look_points", "floor_at", "judge_results", "place", "settling", "StopRule"]
        start, errors = threading.Barrier(16), []

        def ask(k):
            start.wait()
            for i in range(300):
                try:
                    getattr(rule, names[(k + i) % len(names)])
                except Exception as e:
                    errors.append(repr(e))

        threads = [threading.Thread(target=ask, args=(k,)) for k in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(len(errors), errors[:1])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("0 "), out.stdout


def test_every_relative_import_stays_inside_the_package():
    """A module moved out of a subpackage (rule/version.py became protocol.py) kept a `from ..errors import` in a
    function: nothing imported it until the function ran (CI: "attempted relative import beyond top-level package")."""
    package = ROOT / "kerasbench"
    beyond = []
    for name, path in module_names(package).items():
        depth = name.count(".") + (path.name == "__init__.py")  # the packages above the module, kerasbench included
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.level > depth:
                beyond.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not beyond, "relative imports beyond kerasbench: " + ", ".join(beyond)
