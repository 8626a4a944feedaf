"""Machine identity: the name records and reports are keyed by, and the hardware fingerprint that says
whether two machines' figures may be compared.

The **name** is asv's machine name, never the host name (a CI runner gets a new host name per job):
$KERASBENCH_MACHINE, else the `--machine NAME` of the `asv run` this process runs under, else the one
machine of ~/.asv-machine.json (`asv machine --machine NAME --yes`; asv itself picks the entry named
after the host first, then the only entry), else the host name, as asv does when it has no machine file.

The **fingerprint** is what decides a measurement's scale: CPU model, logical cores, memory (rounded
to the GiB), GPU, allocator and glibc. Two records with the same fingerprint are comparable whatever
their machines are called; with different ones, compare says so per cell.
"""

from __future__ import annotations

import os
import platform
import re
from typing import Any, Dict, Mapping, Optional

from .errors import UsageError
from .units import check_number

ENV_VAR = "KERASBENCH_MACHINE"
ASV_MACHINE_FILE = "~/.asv-machine.json"
# What a valid machine name may hold: it names a folder of asv's results and of the records tree.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
# The record environment's keys that make up the fingerprint (worker.environment writes them).
FINGERPRINT_KEYS = ("cpu_model", "cpu_count", "memory_total", "gpu_name", "allocator", "libc")
GIB = 1 << 30


def check_name(name: str, source: str = "--machine") -> str:
    """`name` if it can name a results folder; a one-line UsageError otherwise."""
    if not _NAME.match(name or ""):
        raise UsageError(f"Invalid machine name from {source}. Received: {name!r}. Expected letters, digits, "
                         "'.', '_' or '-' (at most 100, not starting with '.' or '-').")
    return name


def _asv_run_machine() -> Optional[str]:
    """The `--machine NAME` of an `asv run` among this process's ancestors (asv does not pass it on)."""
    try:
        import psutil
    except ImportError:  # asv's TF environments lack psutil: the other sources still apply
        return None
    try:
        for proc in psutil.Process().parents():
            args = proc.cmdline()
            if not any(os.path.basename(a).startswith("asv") or a == "asv" for a in args[:3]):
                continue
            for i, a in enumerate(args):
                if a == "--machine" and i + 1 < len(args):
                    return args[i + 1]
                if a.startswith("--machine="):
                    return a.split("=", 1)[1]
    except psutil.Error:
        return None
    return None


def asv_machine_file_name(path: Optional[str] = None, host: Optional[str] = None) -> Optional[str]:
    """The machine asv would pick from its machine file: the one named after the host, else the only one."""
    path = os.path.expanduser(path or ASV_MACHINE_FILE)
    from .files import read_json

    try:  # a FIFO or a device there is a machine file that cannot be read, as a corrupt one: not asv's answer
        entries = {k: v for k, v in read_json(path, "asv machine file").items()
                   if k != "version" and isinstance(v, dict)}
    except (UsageError, AttributeError):
        return None
    host = host or platform.node()
    if host in entries:
        return host
    if len(entries) == 1:
        name = next(iter(entries))
        return entries[name].get("machine", name)
    return None


def name(given: Optional[str] = None) -> str:
    """This machine's name: `given` (--machine), $KERASBENCH_MACHINE, asv run's --machine, asv's file, the host."""
    if given:
        return check_name(given)
    if os.environ.get(ENV_VAR):
        return check_name(os.environ[ENV_VAR], f"${ENV_VAR}")
    found = _asv_run_machine() or asv_machine_file_name()
    if found:
        return check_name(found, "asv's machine")
    return re.sub(r"[^A-Za-z0-9._-]", "_", platform.node() or "machine").lstrip(".-") or "machine"


def fingerprint(environment: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """The hardware fingerprint of a record's environment (memory rounded to the GiB); {} when unknown."""
    env = environment or {}
    found = {k: env.get(k) for k in FINGERPRINT_KEYS if env.get(k) is not None}
    if isinstance(found.get("memory_total"), (int, float)):
        found["memory_total"] = round(found["memory_total"] / GIB)  # kernels reserve a little differently
    return found


def difference(a: Optional[Mapping[str, Any]], b: Optional[Mapping[str, Any]]) -> Optional[str]:
    """None when two environments' hardware may be compared, else what differs ('cpu_count 2 vs 8').

    A key either side lacks (records of older kerasbench, the GPU of a CPU run) does not count.
    """
    fa, fb = fingerprint(a), fingerprint(b)
    diff = [k for k in FINGERPRINT_KEYS if k in fa and k in fb and fa[k] != fb[k]]
    if not diff:
        return None
    unit = {"memory_total": " GiB"}
    return ", ".join(f"{k} {fa[k]}{unit.get(k, '')} vs {fb[k]}{unit.get(k, '')}" for k in diff)


def label(environment: Optional[Mapping[str, Any]]) -> str:
    """The machine a record ran on, for a note: its asv machine name, else its host name, else 'unknown'."""
    env = environment or {}
    return env.get("machine_name") or env.get("hostname") or "unknown"


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask, which a container or taskset narrows)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_jobs() -> int:
    """Pairs measured at once by default: $KERASBENCH_JOBS, else the usable cores (memory gates each start)."""
    value = os.environ.get("KERASBENCH_JOBS")
    if value:
        jobs = check_number(value, "$KERASBENCH_JOBS (pairs at once)", 1)
        if jobs != int(jobs):
            raise UsageError(f"Invalid value for $KERASBENCH_JOBS. Received: {value!r}. Expected a positive integer.")
        return int(jobs)
    return usable_cores()
