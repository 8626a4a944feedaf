"""Making one asv environment: its pins installed with uv (one resolve, wheels linked from its cache; forced with
--no-deps where the pins exclude each other, then an import check) or by asv's own pip, the free space it needs
first, the note of what was forced, and the end of a creation that did not finish.

Which environment a set of pins is, finding it and holding it while in use, are kerasbench.environment's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from typing import Callable, List, Optional, Sequence, Tuple

from .asvconf import LEGACY_KERAS_VAR, REASON_PATTERNS, RELEASES_EXTRA, canonical, package_of, split_pin
from .errors import UsageError
from .files import read_json


def make(conf: object, env, reqs: dict, no_deps: Sequence[str], progress: Optional[Callable[[str], None]]) -> None:
    """Environment `env` with exactly `reqs` made, unless present (environment.python_for, under its lock)."""
    import time

    if not env.check_presence():
        started = time.monotonic()
        if os.path.isdir(env._path):  # what an interrupted or failed creation left: asv would stop on it
            if progress:
                progress(f"removing the half-made environment {env._path} (an earlier creation did not finish)")
            shutil.rmtree(env._path, ignore_errors=True)
        check_free(env._path, env.name)
        uv = installer(env)
        forced, why = [name for name in reqs if name in no_deps], ""
        if not uv and "keras-nightly" in reqs and not any(k.startswith("tf-nightly") for k in reqs):
            raise UsageError(f"Environment {env.name} replaces the release's Keras by keras-nightly: that needs uv "
                             f"({RELEASES_EXTRA}, or pip install uv), or ${INSTALLER_VAR} unset.")
        if forced and not uv:
            raise UsageError(f"Environment {env.name} installs {', '.join(forced)} with --no-deps: that needs uv "
                             f"({RELEASES_EXTRA}, or pip install uv), or ${INSTALLER_VAR} unset.")
        if progress:
            how = "uv installs" if uv else "pip installs"
            extra = f"; {', '.join(forced)} with --no-deps" if forced else ""
            progress(f"creating asv environment {env.name} ({how} {len(reqs)} pinned packages{extra})")
        try:
            if uv:
                try:
                    _create_with_uv(uv, conf, env, reqs, forced)
                except Unresolvable as refused:  # the nearest that installs: the excluded pins with --no-deps
                    more, why = forced_pins(reqs, env._python, uv, forced)
                    if more == forced:
                        raise RuntimeError(str(refused)) from None
                    forced = more
                    if progress:
                        progress(f"not installable together ({why}); forcing {', '.join(forced)} with --no-deps")
                    shutil.rmtree(env._path, ignore_errors=True)
                    _create_with_uv(uv, conf, env, reqs, forced)
                if forced:
                    failed = import_check(os.path.join(env._path, "bin", "python"), reqs, forced)
                    if failed:
                        raise RuntimeError(f"the forced environment does not import: {failed}")
                    from .files import write_json

                    write_json(os.path.join(env._path, FORCED_FILE), {"forced": forced, "why": why},
                               "the environment's install note")
            else:
                env.create()
                extras = gpu_extras(conf, reqs)
                if extras:  # asv's matrix drops pip extras: the GPU config installs them with the project
                    env.run_executable("python", ["-m", "pip", "install", *extras])
        except BaseException as e:  # an interrupt, or the installer's errors (pip's output is in asv's log)
            _discard(env._path)
            if isinstance(e, Exception):
                raise UsageError(f"could not create environment {env.name}: {e}") from None
            raise
        if progress:
            progress(f"environment ready in {time.monotonic() - started:.0f} s")


INSTALLER_VAR = "KERASBENCH_INSTALLER"
MIN_FREE_VAR = "KERASBENCH_MIN_FREE_GIB"
MIN_FREE_GIB = 4.0  # a TF environment takes ~2 GiB (its wheels in uv's cache, hard-linked into its folder)
NO_ROOM = "GiB an environment needs"  # in check_free's refusal: the machine's disk, not the question (answers)


def min_free_gib() -> float:
    """The free space an environment's creation needs, GiB: $KERASBENCH_MIN_FREE_GIB, else MIN_FREE_GIB (0: none)."""
    text = os.environ.get(MIN_FREE_VAR, "").strip()
    if not text:
        return MIN_FREE_GIB
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise UsageError(f"${MIN_FREE_VAR}={text!r} is not a size in GiB (a number >= 0; 0: no check)")
    return value


def check_free(path: str, name: str) -> None:
    """Refuse to create environment `name` at `path` when its file system has less than min_free_gib() free.

    Nothing else bounds how many environments a triage of nightlies makes: eight nightlies and their wheels took
    ~21 GiB and filled this project's disk mid-run (the answers being measured, and a test run beside them, lost).
    A one-line UsageError names the folder, the space free and the way on, before the installer starts."""
    need = min_free_gib()
    if not need:
        return
    where = os.path.abspath(path)
    while not os.path.isdir(where) and os.path.dirname(where) != where:
        where = os.path.dirname(where)
    free = shutil.disk_usage(where).free / 2**30
    if free < need:
        raise UsageError(f"could not create environment {name}: {free:.1f} GiB free on {where}, under the {need:g} "
                         f"{NO_ROOM} (${MIN_FREE_VAR}); free space (environments no longer needed in "
                         f"{where}; uv's cache: `uv cache prune`, and `uv cache clean tf-nightly-cpu` for the "
                         f"nightlies' wheels), or set {MIN_FREE_VAR}=0 to create it anyway")


def installer(env: object) -> Optional[str]:
    """uv's path when kerasbench creates `env` with uv: uv found, an asv virtualenv, $KERASBENCH_INSTALLER not pip."""
    choice = os.environ.get(INSTALLER_VAR, "uv")
    if choice not in ("uv", "pip"):
        raise UsageError(f"Unknown installer. Received: {INSTALLER_VAR}={choice!r}. Expected one of: uv, pip.")
    if choice == "pip" or getattr(env, "tool_name", None) != "virtualenv":
        return None
    beside = os.path.join(os.path.dirname(sys.executable), "uv")  # pip install uv into kerasbench's venv
    return beside if os.access(beside, os.X_OK) else shutil.which("uv")


def _pins(reqs: dict) -> list:
    """['name==version', ...] of asv `req` pins (asv's pip+ prefix and pip flags dropped)."""
    return ["{}=={}".format(*split_pin(name, value)[:2]) for name, value in reqs.items()]


def _create_with_uv(uv: str, conf: object, env, reqs: dict, forced: Sequence[str] = ()) -> None:
    """Make the virtualenv asv would make for `env` at its path, with uv: seeded with pip (asv installs the
    project with it), every pin in one resolve (the `forced` ones after, with --no-deps), asv's info file
    last (asv then finds it present). Compiled to bytecode, as pip installs: without .pyc files (uv's default)
    every import compiles its source, and importing TF 2.21 that way leaves ~21 MiB of free heap in a worker that
    hides the loop's first ~21 MiB of RSS growth (docs/findings.md)."""
    import subprocess

    os.makedirs(os.path.dirname(env._path), exist_ok=True)
    resolved = _pins({k: v for k, v in reqs.items() if k not in forced})
    python = os.path.join(env._path, "bin", "python")
    # cloudpickle, unpinned: what a body= function without an importable name needs in the worker (kerasbench.api);
    # asv's install of the project would bring it too. Pure Python, no requirements: the resolve stays the pins'.
    steps = [[uv, "venv", "--quiet", "--seed", "--python", env._executable, env._path],
             [uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", python, "wheel", "pip>=8",
              "cloudpickle", *resolved, *gpu_extras(conf, reqs)]]
    if forced:
        steps.append([uv, "pip", "install", "--quiet", "--compile-bytecode", "--no-deps", "--python", python,
                      *_pins({k: reqs[k] for k in forced})])
    if "keras-nightly" in reqs and "keras" not in reqs and not any(k.startswith("tf-nightly") for k in reqs):
        # a TF release requires `keras`, which installs into the same folder as keras-nightly: its release is
        # removed and keras-nightly's files put back whole
        steps += [[uv, "pip", "uninstall", "--quiet", "--python", python, "keras"],
                  [uv, "pip", "install", "--quiet", "--compile-bytecode", "--reinstall", "--no-deps", "--python",
                   python, f"keras-nightly=={reqs['keras-nightly']}"]]
    for argv in steps:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode:
            last = (done.stdout.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            error = Unresolvable if "No solution found" in done.stdout and "--no-deps" not in argv else RuntimeError
            raise error(f"{os.path.basename(uv)} {argv[1]} failed: {last}")
    env.save_info_file(env._path)


FORCED_FILE = "kerasbench-forced.json"  # in a forced environment's folder: what was forced, and why



def resolves(uv: str, reqs: dict, python: str) -> Tuple[bool, str]:
    """(True, '') when uv resolves `reqs` together for CPython `python` on this platform, else (False, its reason)."""
    import subprocess

    argv = [uv, "pip", "compile", "--quiet", "--no-header", "--python-version", python, "-"]
    done = subprocess.run(argv, input="\n".join(_pins(reqs)) + "\n", stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
    if done.returncode == 0:
        return True, ""
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    cause = [line[len("cause:"):].strip() if line.startswith("cause:") else line
             for line in lines if not line.lower().startswith(("error:", "hint:", "×", "help:"))]
    return False, " ".join(cause) or (lines[-1] if lines else f"exit {done.returncode}")


class Unresolvable(RuntimeError):
    """The installer found no set of packages that satisfies every pin."""


def forced_pins(reqs: dict, python: str, uv: str, no_deps: Sequence[str] = ()) -> Tuple[List[str], str]:
    """(pins to install with --no-deps, why): `no_deps`, and the ones other pins' requirements exclude, until the
    rest resolve; `no_deps` unchanged when that never happens (the pins cannot be installed).

    uv's reason names them: "tensorflow-cpu==2.14.0 depends on keras>=2.14.0,<2.15 ... you require
    keras==2.13.1" forces keras, the dependency (TF keeps its own: tensorboard, the estimator). Where forcing
    dependencies does not resolve (scipy 1.17.1 needs numpy>=1.26.4, TF 2.13.1 numpy<=1.24.3), the pins that
    depend on them are forced instead (scipy, with the numpy TF wants).
    """
    base = [name for name in reqs if name in no_deps]
    pinned = {canonical(name): name for name in reqs if not name.startswith("pip+")}
    first_why = ""
    for pattern in REASON_PATTERNS:
        forced, why = list(base), ""
        for _ in range(len(reqs)):
            ok, reason = resolves(uv, {k: v for k, v in reqs.items() if k not in forced}, python)
            if ok:
                return forced, why
            why = why or reason
            first_why = first_why or reason
            named = [pinned[canonical(n)] for n in pattern.findall(reason) if canonical(n) in pinned]
            named = [n for n in dict.fromkeys(named) if n not in forced]
            if not named:
                break
            forced += named
    return base, first_why


def module_of(package: str) -> str:
    """The module a package installs (tensorflow-cpu, tf-nightly: tensorflow; tf-keras: tf_keras; the nightlies'
    companions keras-nightly and tb-nightly: keras and tensorboard)."""
    name = canonical(package)
    if name.startswith(("tensorflow", "tf-nightly")):
        return "tensorflow"
    return {"keras-nightly": "keras", "tb-nightly": "tensorboard"}.get(name, name.replace("-", "_"))


def import_check(python: str, reqs: dict, forced: Sequence[str] = ()) -> str:
    """'' when `python` imports tensorflow, builds a layer of its Keras (tf-keras when pinned) and imports the
    `forced` packages, else the error's last line."""
    import subprocess

    env = dict(os.environ)
    if any(package_of(name) == "tf-keras" for name in reqs):
        env[LEGACY_KERAS_VAR] = "1"
    others = "".join(f"; import {module_of(package_of(name))}" for name in forced
                     if module_of(package_of(name)) != "tensorflow")
    code = f"import tensorflow as tf; tf.keras.layers.Dense(1){others}; print(tf.__version__)"
    try:
        done = subprocess.run([python, "-c", code], env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as e:
        return str(e)
    lines = done.stdout.strip().splitlines()
    return "" if done.returncode == 0 else (lines[-1] if lines else f"exit {done.returncode}")


def install_note(python: str) -> dict:
    """{'forced': [names], 'why': reason} of the environment of interpreter `python` ({} when nothing was forced)."""
    path = os.path.join(os.path.dirname(os.path.dirname(python)), FORCED_FILE)
    try:
        return read_json(path, "environment note")
    except UsageError:
        return {}


def _discard(path: str) -> None:
    """End what an unfinished environment creation started (uv, pip, virtualenv) and remove its folder."""
    end_creations()
    shutil.rmtree(path, ignore_errors=True)


def end_creations() -> None:
    """End the processes an environment creation started (uv, pip, virtualenv).

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


def gpu_extras(conf: object, reqs: dict) -> list:
    """What a GPU config's install_command adds through kerasbench's `gpu` extra (CUDA wheels, NVML)."""
    if "[gpu]" not in " ".join(getattr(conf, "install_command", None) or []):
        return []
    return [f"tensorflow[and-cuda]=={reqs['tensorflow']}", "nvidia-ml-py"] if "tensorflow" in reqs else []
