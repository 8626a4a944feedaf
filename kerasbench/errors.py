"""Errors a user can act on. The CLI prints them on one line and exits 2."""

from __future__ import annotations

from typing import Iterable


class UsageError(Exception):
    """A user mistake: an unknown name, a bad value, an unwritable path, a bad file."""


class Skip(Exception):
    """This (loop shape, strategy) pair cannot run here; the message says why."""


def unknown(kind: str, value: object, valid: Iterable[str]) -> UsageError:
    """The error for a name that is not in a registry, listing the valid ones, the nearest first when some are
    close ("Did you mean sweep?")."""
    import difflib

    valid = sorted(valid)
    near = difflib.get_close_matches(str(value), valid, n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(near)}?" if near else ""
    return UsageError(f"Unknown {kind}. Received: {kind.split()[0]}={value!r}.{hint} "
                      f"Expected one of: {', '.join(valid)}.")


def repro_failed(path: str, record: dict) -> UsageError:
    """The error for a repro file whose code raised in the worker: the file, its line, the exception."""
    repeat = next((r for r in record["repeats"] if r["status"] == "failed"), {})
    tail = repeat.get("log_tail") or []
    where = [line.strip() for line in tail if line.strip().startswith(f'File "{path}"')]
    line = where[-1].split(", ")[1] if where else ""
    error = tail[-1].strip() if tail else record["reason"]
    return UsageError(f"Repro file {path} failed in the worker{' at ' + line if line else ''}: {error}")
