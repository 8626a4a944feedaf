"""The kerasbench command: one subcommand per question (DESCRIPTION, the top of `kerasbench -h`).

This module builds the parser from the command modules (kerasbench.commands: one module per command, its
options declared there or in the shared groups of commands.options) and dispatches to the chosen one. User
mistakes (unknown names, bad values, unwritable paths) print one line and exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, TextIO

from .commands import modules
from .commands.options import Parser
from .errors import UsageError


# The top of `kerasbench -h`: which command answers which question (the list below it says what each does).
DESCRIPTION = """\
Which cleanup keeps my loop flat?       kerasbench run --loop sweep   (or kerasbench.measure(body=...) in Python)
Where does it grow?                     kerasbench run --loop sweep --strategy S --trace
Did a TF release change it?             kerasbench compare old.json new.json   (report: the same as HTML)
Which release changed it?               kerasbench triage --good 2.12.1 --bad 2.21.0 --loop sweep --strategy S
Which package of that release?          kerasbench attribute --good V1 --bad V2 --loop sweep --strategy S
Which cleanup steps are needed?         kerasbench ablate --loop sweep
Can I trust a verdict?                  kerasbench score RUN.json --reference docs/reference/tf-2.21.0.json
What can this machine detect?           kerasbench calibrate"""


def build_parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per module of kerasbench.commands, in its COMMANDS order."""
    from . import __version__

    parser = Parser(prog="kerasbench", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"kerasbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for command in modules():
        keywords = command.parser_keywords() if hasattr(command, "parser_keywords") else {}
        p = sub.add_parser(command.NAME, help=command.HELP, **keywords)
        command.add_arguments(p)
        p.set_defaults(func=command.run)
    return parser


# The exit code when the reader of the output went away (`kerasbench run ... | head -2`): 128 + SIGPIPE, what a
# shell reports for a program that SIGPIPE ended (Python ignores SIGPIPE, so the command sees EPIPE instead).
BROKEN_PIPE = 141


def _say(text: str) -> None:
    """A line on stderr, if it can still be written (a closed terminal, a closed pipe: the exit code says it); its
    control characters escaped (a message may quote a file's strings)."""
    from .console import printable

    try:
        sys.stderr.write(printable(text))
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _quiet(stream: TextIO) -> None:
    """`stream` flushed; if its reader went away, its file descriptor now writes to /dev/null, so that the
    interpreter's own flush at exit neither fails nor turns the exit code into 120 (the Python docs' recipe)."""
    try:
        stream.flush()
        return
    except BrokenPipeError:
        pass
    except (OSError, ValueError):
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a file (a StringIO), or already closed
        pass


def main(argv: Optional[list] = None, out: Optional[TextIO] = None) -> int:
    """Run the command `argv` (default: sys.argv); its exit code. Output goes to `out` (default: stdout).

    Exit codes: 0 done (every pair ok or skipped), 1 something failed or was stopped (a pair, a write),
    2 a usage error, 130 interrupted by Ctrl-C (SIGINT), 143 by SIGTERM, 129 by SIGHUP, 141 the output's reader
    went away (a closed pipe; the pairs finished before are kept). Every worker ends with the command.
    """
    from . import procs

    from .console import Printable

    out = Printable(out or sys.stdout)  # strings of files (records' names) are shown, never obeyed by the terminal
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse already printed its one-line usage error
        return e.code
    import warnings

    try:
        with procs.interrupts(), warnings.catch_warnings():  # Ctrl-C, SIGTERM, SIGHUP and the way out end every
            # worker's process group. numpy's RuntimeWarnings on absurd readings (1e308 bytes: an overflow to inf in
            # a sum) were two lines of its source per call on stderr; the results say inf or nan where they are one
            warnings.filterwarnings("ignore", r"(overflow|invalid value|divide by zero) encountered", RuntimeWarning)
            code = args.func(args, out)
            out.flush()  # a closed pipe shows here, not in the interpreter's flush at exit
            return code
    except UsageError as e:
        _say(f"kerasbench: error: {e}\n")
        return 2
    except KeyboardInterrupt as e:  # procs.Terminated (SIGTERM) and procs.Hangup (SIGHUP) too
        _say(f"kerasbench: interrupted ({procs.signal_name(e)})\n")
        return procs.exit_code(e)
    except BrokenPipeError:  # `kerasbench run ... | head`: stdout (or stderr) closed; the workers ended on the way out
        for stream in (out, sys.stdout, sys.stderr):
            _quiet(stream)
        return BROKEN_PIPE
