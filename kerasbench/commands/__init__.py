"""The commands of `kerasbench`, one module each, in the order `kerasbench --help` lists them.

A command module has NAME and HELP (and optionally PARSER: more keywords for its subparser), `add_arguments(p)`
(its options: mostly the shared groups of .options) and `run(args, out) -> exit code`. Adding a command is its
module and its name in COMMANDS. kerasbench.cli builds the parser from this list and dispatches; nothing outside
this package imports it but cli.
"""

import importlib
from types import ModuleType
from typing import List

COMMANDS = ("list", "run", "ablate", "compare", "triage", "attribute", "report", "atlas", "score", "calibrate",
            "overhead", "publish", "merge", "envs")


def modules() -> List[ModuleType]:
    """The command modules of COMMANDS, imported (each imports its heavy modules only when it runs)."""
    return [importlib.import_module(f"{__name__}.{'list_' if name == 'list' else name}") for name in COMMANDS]
