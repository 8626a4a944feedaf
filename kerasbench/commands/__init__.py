"""The commands of `kerasbench`, one module each, in the order `kerasbench --help` lists them.

A command module has NAME and HELP (and optionally PARSER: more keywords for its subparser), `add_arguments(p)`
(its options: mostly the shared groups of .options) and `run(args, out) -> exit code`. Adding a command is its
module, its import below and its name in COMMANDS. kerasbench.cli builds the parser from this list and dispatches;
nothing outside this package imports it but cli. The modules are imported plainly (each imports its heavy modules
only when it runs), so the import tests (tests/test_imports.py) see every command's imports.
"""

import sys
from types import ModuleType
from typing import List

from . import (ablate, atlas, attribute, calibrate, compare, envs, list_, merge, overhead,  # noqa: F401
               publish, report, reports, run, score, triage)

COMMANDS = ("list", "run", "ablate", "compare", "triage", "attribute", "report", "atlas", "score", "calibrate",
            "overhead", "publish", "merge", "envs", "reports")


def module_name(name: str) -> str:
    """The module of command `name` in this package ('list' is list_: a builtin's name)."""
    return f"{__name__}.{'list_' if name == 'list' else name}"


def modules() -> List[ModuleType]:
    """The command modules of COMMANDS, in that order."""
    return [sys.modules[module_name(name)] for name in COMMANDS]
