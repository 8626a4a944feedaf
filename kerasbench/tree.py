"""The records tree beside asv's results: <root>/<machine>/<commit8>-<asv environment>[-<allocator>]/<loop>.json.

The asv suite writes one records file per loop shape into its run's folder (`run_folder`; the machine is asv's
machine name, kerasbench.machine, not the host name: folders written before were named after the host and still
load); compare and report read them back (kerasbench.loading), publish picks the newest run (`newest_run`).
"""

from __future__ import annotations

import os
import re
from typing import Dict, List, Optional, Tuple

from . import allocators, machine as machines
from .files import make_folder, write_json
from .record import RecordsFile

RECORDS_DIR_VAR = "KERASBENCH_RECORDS_DIR"  # where the asv suite's records go, instead of <asv conf dir>/.asv/records
RUN_FOLDER = re.compile(r"^(?P<commit>[0-9a-f]{8}|nocommit)-(?P<env>.+)$")


def records_root(conf_dir: str) -> str:
    """The records tree beside an asv config's results: $KERASBENCH_RECORDS_DIR, else <conf_dir>/.asv/records."""
    return os.environ.get(RECORDS_DIR_VAR) or os.path.join(conf_dir, ".asv", "records")


def run_folder(root: str, commit: str, env_name: str, allocator: str = allocators.DEFAULT,
               machine: Optional[str] = None) -> str:
    """The folder of one asv run's records: <root>/<machine>/<commit8>-<env name>[-<allocator>].

    `machine` defaults to this machine's asv name (kerasbench.machine.name), never the host name.
    """
    suffix = "" if allocator == allocators.DEFAULT else f"-{allocator}"
    return os.path.join(root, machine or machines.name(), f"{commit[:8]}-{env_name}{suffix}")


def save_records(folder: str, name: str, payload: RecordsFile) -> str:
    """Write a records file `<name>.json` into `folder` (made if missing), atomically; returns its path."""
    make_folder(folder, "records")
    return write_json(os.path.join(folder, f"{name}.json"), payload, "records")


def place_of(path: str) -> Tuple[Optional[str], Optional[str], Optional[str]]:
    """(machine, commit8, env name) when `path` sits in a records tree, else Nones (older trees: the host)."""
    folder = os.path.dirname(os.path.abspath(path))
    m = RUN_FOLDER.match(os.path.basename(folder))
    if not m:
        return None, None, None
    return os.path.basename(os.path.dirname(folder)), m["commit"], m["env"]


def newest_run(root: str) -> Tuple[Tuple[Optional[str], Optional[str]], List[str], int]:
    """((machines, commit), its run folders, how many other commits) of the newest commit in a records tree.

    A fan-out's merged tree holds one folder per machine for the same commit: all of them are the newest
    run (machines joined with '+', e.g. 'ci-tf212+ci-tf221').
    """
    groups: Dict[str, List[Tuple[str, str]]] = {}
    for machine in sorted(os.listdir(root)):
        if not os.path.isdir(os.path.join(root, machine)):
            continue
        for run in sorted(os.listdir(os.path.join(root, machine))):
            m = RUN_FOLDER.match(run)
            folder = os.path.join(root, machine, run)
            if m and os.path.isdir(folder):
                groups.setdefault(m["commit"], []).append((machine, folder))
    if not groups:
        return (None, None), [], 0
    newest = max(groups, key=lambda k: max(os.path.getmtime(f) for _, f in groups[k]))
    names = "+".join(dict.fromkeys(m for m, _ in groups[newest]))
    return (names, newest), [f for _, f in groups[newest]], len(groups) - 1
