"""Reading kerasbench's asv configurations: folders, a matrix's environments, and the interpreter of one."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from typing import Callable, Optional

from . import releases
from .errors import UsageError


CONFIG_VAR = "KERASBENCH_CONFIG"  # an asv config file, or a folder holding kerasbench's configs (a clone)
MATRIX, DEFAULT_CONFIG, GPU_CONFIG = "asv.matrix.json", "asv.conf.json", "asv.gpu.json"


def clone_dir() -> str:
    """The folder kerasbench was imported from: a clone (or an editable install's checkout) holds the configs."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_config(given: Optional[str], default: str = MATRIX) -> str:
    """The asv config a command uses: --config, else $KERASBENCH_CONFIG, else `default` in the current folder,
    else in the clone kerasbench was imported from; a one-line UsageError naming every place searched.

    A given --config is used as it is (its read error names it). $KERASBENCH_CONFIG may be a file, or a
    folder in which `default` is looked for.
    """
    if given:
        return given
    env = os.environ.get(CONFIG_VAR)
    if env:  # set: it decides (a wrong one falling back to another config would go unnoticed)
        path = os.path.join(env, default) if os.path.isdir(env) else env
        if not os.path.isfile(path):
            raise UsageError(f"No asv config at ${CONFIG_VAR}={env}: expected a config file or a folder with "
                             f"{default}; searched --config (not given), then ${CONFIG_VAR}.")
        return path
    searched = [f"${CONFIG_VAR} (unset)"]
    for where, folder in (("the current folder", os.getcwd()), ("the clone kerasbench was imported from", clone_dir())):
        path = os.path.join(folder, default)
        if os.path.isfile(path):
            return path if folder != os.getcwd() else default
        searched.append(f"{where} ({folder})")
    raise UsageError(f"No asv config {default} found: searched --config (not given), {', '.join(searched)}. "
                     f"Give --config PATH, or set {CONFIG_VAR} to a clone of kerasbench or a config file.")


def read_config(config: str) -> dict:
    """An asv config file as a dict (asv's JSON allows // comment lines)."""
    try:
        with open(config) as f:
            return json.loads("\n".join(line for line in f if not line.lstrip().startswith("//")))
    except OSError as e:
        raise UsageError(f"Cannot read asv config {config}: {e.strerror}.") from None
    except ValueError as e:
        raise UsageError(f"Cannot parse asv config {config}: {e}.") from None


def html_dir_of(config: str) -> str:
    """The folder `asv publish` writes the dashboard to (the config's html_dir, beside the config)."""
    return os.path.join(os.path.dirname(os.path.abspath(config)), read_config(config).get("html_dir", "html"))


def environments(config: str, tf: Optional[str] = None) -> list:
    """[(asv environment name, {package: version})] of `config`, optionally only TF release `tf`.

    `tf` may be any release `run --tf` accepts: a patch release the matrix does not pin gets the pins
    releases.requirements_for derives (from the package index), and the name asv gives those.
    """
    from asv import environment
    from asv.config import Config

    read_config(config)  # a readable error for a missing or broken file, before asv's own
    if tf is not None:
        entries = includes(config)
        package = releases.tf_package(entries)
        pinned = sorted((e["req"][package] for e in entries), key=releases.version_key)
        if releases.version_key(tf)[:2] not in {releases.version_key(v)[:2] for v in pinned}:
            raise UsageError(f"Unknown TF version for {config}. Received: tf={tf!r}. Expected one of: "
                             f"{', '.join(pinned)}, or another patch release of one of their minor releases.")
        _, env = environment_for(config, releases.requirements_for(tf, entries))
        return [(env.name, dict(env.requirements))]
    conf = Config.load(config)
    return [(env.name, dict(env.requirements)) for env in environment.get_environments(conf, None, verbose=False)]


def matrix_json(config: str) -> dict:
    """The environments of `config` as GitHub Actions' matrix {"include": [...]}: one entry per environment
    (name for `asv run -E`, tf, tf_package, keras, python, device), nothing that depends on this machine."""
    from asv import environment
    from asv.config import Config

    read_config(config)
    conf = Config.load(config)
    found = []
    for env in environment.get_environments(conf, None, verbose=False):
        reqs = dict(env.requirements)
        package = "tensorflow-cpu" if "tensorflow-cpu" in reqs else "tensorflow"
        variables = {name: value for (_, name), value in (getattr(env, "_tagged_env_vars", None) or {}).items()}
        found.append({"name": env.name, "tf": reqs.get(package), "tf_package": package, "keras": reqs.get("keras"),
                      "python": env.python, "device": variables.get("KERASBENCH_DEVICE", "cpu"),
                      "config": os.path.basename(config)})
    return {"include": found}


def includes(config: str) -> list:
    """The matrix `include` entries of an asv config (each: python and exact `req` pins)."""
    entries = read_config(config).get("include") or []
    if not entries:
        raise UsageError(f"The asv config {config} has no matrix 'include' entries: "
                         "use asv.matrix.json or asv.gpu.json.")
    return entries


def environment_for(config: str, reqs: dict) -> tuple:
    """(asv Config, asv Environment) of `config` with exactly the pins `reqs`; nothing is created."""
    from asv import environment
    from asv.config import Config

    read_config(config)
    conf = Config.load(config)
    first = conf.include[0] if conf.include else {}
    entry = {"python": first.get("python") or conf.pythons[0], "req": dict(reqs)}
    # the config's environment variables (asv.gpu.json: KERASBENCH_DEVICE=gpu) are part of the name
    entry.update({k: first[k] for k in ("env", "env_nobuild") if k in first})
    # only this environment: exclude everything the (empty) matrix would add, include ours
    conf.matrix, conf.exclude, conf.include = {}, [{"python": ".*"}], [entry]
    found = list(environment.get_environments(conf, None, verbose=False))
    if len(found) != 1:
        raise UsageError(f"The asv config {config} does not define one environment for {reqs}.")
    return conf, found[0]


def python_for(config: str, reqs: dict, progress: Optional[Callable[[str], None]] = None) -> tuple:
    """(interpreter, name) of the asv environment of `config` with exactly `reqs`, created if missing.

    asv names and builds it (`asv run --config <config> -E <name>` reuses the same folder), so
    kerasbench has no environment manager of its own. The worker runs there with kerasbench on
    PYTHONPATH (it needs only numpy and TF from the environment).
    """
    import time

    conf, env = environment_for(config, reqs)
    if not env.check_presence():
        started = time.monotonic()
        if os.path.isdir(env._path):  # what an interrupted or failed creation left: asv would stop on it
            if progress:
                progress(f"removing the half-made environment {env._path} (an earlier creation did not finish)")
            shutil.rmtree(env._path, ignore_errors=True)
        if progress:
            progress(f"creating asv environment {env.name} (pip installs {len(reqs)} pinned packages, minutes)")
        try:
            env.create()
            extras = gpu_extras(conf, reqs)
            if extras:  # asv's matrix drops pip extras: the GPU config installs them with the project
                env.run_executable("python", ["-m", "pip", "install", *extras])
        except BaseException as e:  # an interrupt, or asv's own errors (pip's output is in asv's log)
            _discard(env._path)
            if isinstance(e, Exception):
                raise UsageError(f"asv could not create environment {env.name}: {e}") from None
            raise
        if progress:
            progress(f"environment ready in {time.monotonic() - started:.0f} s")
    return os.path.join(env._path, "bin", "python"), env.name


def _discard(path: str) -> None:
    """End what an unfinished environment creation started (pip, virtualenv) and remove its folder.

    Only processes this one started and kerasbench.procs does not own (those are measuring workers) are ended.
    """
    import psutil

    from . import procs

    spared = set()
    for group in procs.live():
        spared.add(group.pid)
        with contextlib.suppress(psutil.Error):
            spared.update(p.pid for p in psutil.Process(group.pid).children(recursive=True))
    for child in psutil.Process().children(recursive=True):
        if child.pid not in spared:
            with contextlib.suppress(psutil.Error):
                child.kill()
    shutil.rmtree(path, ignore_errors=True)


def python_for_tf(config: str, version: str, progress: Optional[Callable[[str], None]] = None) -> str:
    """The interpreter of `config`'s asv environment for TF `version` (pins: the matrix's, else by release date)."""
    python, _ = python_for(config, releases.requirements_for(version, includes(config)), progress)
    return python


def gpu_extras(conf: object, reqs: dict) -> list:
    """What a GPU config's install_command adds through kerasbench's `gpu` extra (CUDA wheels, NVML)."""
    if "[gpu]" not in " ".join(getattr(conf, "install_command", None) or []):
        return []
    return [f"tensorflow[and-cuda]=={reqs['tensorflow']}", "nvidia-ml-py"] if "tensorflow" in reqs else []
