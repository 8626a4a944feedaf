"""The kerasbench command: `list` the registries, `run` pairs and print a table, `compare` TF versions,
`report` them as an HTML page, `calibrate` the floor.

This module builds the parser from the command modules (kerasbench.commands: one module per command, its
options declared there or in the shared groups of commands.options) and dispatches to the chosen one. User
mistakes (unknown names, bad values, unwritable paths) print one line and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, TextIO

from .commands import modules
from .commands.options import Parser
from .errors import UsageError


def build_parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per module of kerasbench.commands, in its COMMANDS order."""
    from . import __version__

    parser = Parser(prog="kerasbench", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"kerasbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for command in modules():
        keywords = command.parser_keywords() if hasattr(command, "parser_keywords") else {}
        p = sub.add_parser(command.NAME, help=command.HELP, **keywords)
        command.add_arguments(p)
        p.set_defaults(func=command.run)
    return parser


def main(argv: Optional[list] = None, out: Optional[TextIO] = None) -> int:
    """Run the command `argv` (default: sys.argv); its exit code. Output goes to `out` (default: stdout).

    Exit codes: 0 done (every pair ok or skipped), 1 something failed or was stopped (a pair, a write),
    2 a usage error, 130 interrupted by Ctrl-C (SIGINT), 143 by SIGTERM. Every worker ends with the command.
    """
    from . import procs

    out = out or sys.stdout
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse already printed its one-line usage error
        return e.code
    try:
        with procs.interrupts():  # Ctrl-C, SIGTERM and the way out end every worker's process group
            return args.func(args, out)
    except UsageError as e:
        sys.stderr.write(f"kerasbench: error: {e}\n")
        return 2
    except KeyboardInterrupt as e:  # procs.Terminated (SIGTERM) too
        code = procs.exit_code(e)
        sys.stderr.write(f"kerasbench: interrupted ({'SIGTERM' if code == 143 else 'SIGINT'})\n")
        return code
    except BrokenPipeError:  # `kerasbench list | head`
        sys.stderr.close()
        return 0
