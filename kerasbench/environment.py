"""Naming and finding asv environments: a config's environments, the interpreter asv finds, the environment asv
names for a set of pins (a release's, a nightly's, with pins, Keras and backend applied), made where missing and
reused where it exists, held while in use (its locks), and made ahead in a background thread (Ahead).

Making one (uv or pip, forced pins, the import check, the free space) is kerasbench.install's; configurations
themselves (where, which entries, the names of pins) are kerasbench.asvconf's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from typing import Callable, List, Optional, Sequence, Tuple

from . import releases
from .asvconf import (BACKEND_PINS, BACKEND_VAR, INSTALLER_ONLY, LEGACY_KERAS_VAR, TF_KERAS_PIN, asv_module,
                      backend_pins, includes, load_config, matrix_entries, package_of, read_config, split_pin)
from .errors import UsageError
from .files import read_json
from .install import end_creations, gpu_extras, make
from .install import install_note, installer, resolves  # noqa: F401 (commands.attribute's, through this module)


def environments(config: str, tf: Optional[str] = None) -> list:
    """[(asv environment name, {package: version})] of `config`, optionally only TF release `tf`.

    `tf` may be any release `run --tf` accepts: a patch release the matrix does not pin gets the pins
    releases.requirements_for derives (from the package index), and the name asv gives those.
    """
    read_config(config)  # a readable error for a missing or broken file, before asv's own
    from .nightlies import is_nightly

    if tf is not None and is_nightly(tf):
        reqs, _ = requirements_with(config, tf)
        _, env = environment_for(config, reqs)
        return [(env.name, dict(env.requirements))]
    if tf is not None:
        entries = includes(config)
        package = releases.tf_package(entries)
        pinned = sorted((e["req"][package] for e in entries), key=releases.version_key)
        older = releases.older_minors(entries, package)  # TF 2.8-2.11: patch releases, on their Pythons
        if releases.version_key(tf)[:2] not in {releases.version_key(v)[:2] for v in pinned} | set(older):
            also = f" (or of {'.'.join(map(str, older[0]))} to {'.'.join(map(str, older[-1]))})" if older else ""
            raise UsageError(f"Unknown TF version for {config}. Received: tf={tf!r}. Expected one of: "
                             f"{', '.join(pinned)}, or another patch release of one of their minor releases{also}.")
        python = None
        if releases.version_key(tf)[:2] in older:  # no wheel for the config's Python: the newest it has (3.10)
            python = (releases.pythons_for(releases.index(package), tf) or [None])[-1]
        _, env = environment_for(config, releases.requirements_for(tf, entries, python=python), python)
        return [(env.name, dict(env.requirements))]
    return [(e["name"], dict(e["req"])) for e in matrix_entries(config)]


def interpreter(python: str) -> str:
    """The CPython `python` ('3.10') asv will find: `pythonX.Y` on PATH, else pyenv's (put on PATH for asv).

    UsageError listing the Pythons found when there is none (a pyenv shim of a version that is not
    active does not count: it only prints an error).
    """
    import glob
    import subprocess

    releases.supported_tags(python)  # a readable error for a malformed version
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == python:
        return sys.executable
    found = shutil.which(f"python{python}")
    if found:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run([found, "-c", "pass"], check=True, capture_output=True, timeout=30)
            return found
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    pyenv = sorted(glob.glob(os.path.join(root, "versions", f"{python}.*", "bin", f"python{python}")),
                   key=releases.version_key)
    if pyenv:  # asv looks the interpreter up on PATH by that name
        os.environ["PATH"] = os.path.dirname(pyenv[-1]) + os.pathsep + os.environ.get("PATH", "")
        return pyenv[-1]
    have = [p for p in releases.PYTHONS if _runs(f"python{p}", root)]
    raise UsageError(f"No Python {python} on this machine (PATH or pyenv). Received: python={python!r}. "
                     f"Expected one of: {', '.join(have) or 'none found'}.")


def _runs(name: str, pyenv_root: str) -> bool:
    """Whether an interpreter of that name runs (on PATH) or pyenv has it."""
    import glob
    import subprocess

    if glob.glob(os.path.join(pyenv_root, "versions", name[len("python"):] + ".*", "bin", name)):
        return True
    found = shutil.which(name)
    try:
        return bool(found) and subprocess.run([found, "-c", "pass"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def environment_for(config: str, reqs: dict, python: Optional[str] = None) -> tuple:
    """(asv Config, asv Environment) of `config` with exactly the pins `reqs` (on Python `python`); nothing created."""
    read_config(config)
    environment = asv_module("asv.environment")
    conf = load_config(config)
    first = conf.include[0] if conf.include else {}
    python = python or first.get("python") or conf.pythons[0]
    interpreter(python)  # asv finds it on PATH (pyenv's versions are not active there)
    entry = {"python": python, "req": dict(reqs)}
    # the config's environment variables (asv.gpu.json: KERASBENCH_DEVICE=gpu) are part of the name
    entry.update({k: dict(first[k]) for k in ("env", "env_nobuild") if k in first})
    if any(package_of(name) == "tf-keras" for name in reqs):  # tf.keras is tf_keras only with the variable set
        entry.setdefault("env", {})[LEGACY_KERAS_VAR] = "1"
    for backend, names in BACKEND_PINS.items():  # Keras 3 on jax or torch: the matrix's backend entries say so
        if any(package_of(name) == names[0] for name in reqs):
            entry.setdefault("env", {})[BACKEND_VAR] = backend
    # only this environment: exclude everything the (empty) matrix would add, include ours
    conf.matrix, conf.exclude, conf.include = {}, [{"python": ".*"}], [entry]
    found = list(environment.get_environments(conf, None, verbose=False))
    if len(found) != 1:
        raise UsageError(f"The asv config {config} does not define one environment for {reqs}.")
    return conf, found[0]


def provided_here(reqs: dict, python: str) -> bool:
    """Whether this interpreter already has exactly the pinned packages (asv_runner aside) on Python `python`."""
    from importlib import metadata

    if f"{sys.version_info[0]}.{sys.version_info[1]}" != python:
        return False
    for name, value in reqs.items():
        if name in INSTALLER_ONLY:  # asv's runner: it does not touch what is measured
            continue
        package, version, _ = split_pin(name, value)
        try:
            if metadata.version(package) != version:
                return False
        except metadata.PackageNotFoundError:
            return False
    return True


SAME = "same"  # the environment name of a release this interpreter provides (asv's own word for it)


def python_for(config: str, reqs: dict, progress: Optional[Callable[[str], None]] = None,
               python: Optional[str] = None, no_deps: Sequence[str] = (), here: bool = True) -> tuple:
    """(interpreter, name) of the asv environment of `config` with exactly `reqs`, created if missing.

    asv names it (`asv run --config <config> -E <name>` reuses the same folder); kerasbench creates it
    with uv where uv is installed (one resolve, wheels hard-linked from uv's cache), else asv does with pip.
    When this interpreter already has exactly those pins (and that Python), it is used: (sys.executable,
    'same'), unless `here` is False (`envs --create`: the folder asv will use is made whatever runs kerasbench).
    The worker runs there with kerasbench on PYTHONPATH (it needs only numpy and TF from it).

    Pins the installer cannot resolve together (TF 2.14.0 with Keras 2.13.1) are forced: `forced_pins`
    names the ones installed with --no-deps after the rest resolved, the environment must then import
    tensorflow and its Keras, and `install_note` of it says so. `no_deps` are always installed that way, and
    so is tf-keras (its own requirement would add the `tensorflow` wheel beside tensorflow-cpu).
    """
    from . import nightlies

    # a pin that says --no-deps (tf-keras: its `tensorflow` requirement beside tensorflow-cpu would install a
    # second TF over the first), and tf-keras however it is pinned
    no_deps = list(no_deps) + [name for name, value in reqs.items() if name not in no_deps and
                               ("--no-deps" in split_pin(name, value)[2] or package_of(name) == "tf-keras")]
    conf, env = environment_for(config, reqs, python) if python else environment_for(config, reqs)
    if here and not no_deps and provided_here(reqs, getattr(env, "_python", "")) and not gpu_extras(conf, reqs):
        return sys.executable, SAME
    with creating(env._path, env.name, progress):
        make(conf, env, reqs, no_deps, progress)
        nightlies.write_note(env._path, reqs, getattr(env, "_python", "") or "3.11")
    return os.path.join(env._path, "bin", "python"), env.name


# environment folder -> its use lock (FOLDER.use), held shared while this process may measure in it
_IN_USE: dict = {}


@contextlib.contextmanager
def creating(path: str, name: str, progress: Optional[Callable[[str], None]] = None):
    """Held while environment `name` at `path` is looked for and made: a second kerasbench asking for it (two
    triages of nightlies with one config, two answer lanes) waits, then finds it made, where it would have removed
    the first's half-made folder as an interrupted creation's and made it again under the first's feet: an
    exclusive flock on its .lock (for the making), then a shared one on its .use for as long as this process
    lives (the environment in use: another's clean-up leaves it, remove_unused). Both files stay, empty, in
    locks_of(path)'s folder beside the environments' (asv's folder holds environments only)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    path = os.path.abspath(path)
    lock = locks_of(path)
    os.makedirs(os.path.dirname(lock), exist_ok=True)
    with open(lock + ".lock", "a") as making:
        try:
            fcntl.flock(making, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if progress:
                progress(f"waiting for another process making environment {name} (it holds {lock}.lock)")
            fcntl.flock(making, fcntl.LOCK_EX)
        yield  # released with the file
        if path not in _IN_USE:
            use = open(lock + ".use", "a")
            fcntl.flock(use, fcntl.LOCK_SH)  # never waits: an exclusive one is only taken under .lock
            _IN_USE[path] = use


def locks_of(path: str) -> str:
    """The stem of environment `path`'s lock files: .asv/env/NAME -> .asv/env.locks/NAME (+ .lock, .use)."""
    return os.path.join(os.path.dirname(path) + ".locks", os.path.basename(path))


def remove_unused(folder: str, hand_over: bool = False) -> bool:
    """Remove the environment at `folder` unless another process uses it (holds its use lock: `creating`); True
    when removed. A nightly triage's clean-up: another triage may measure in an environment this one made. With
    `hand_over`, one kept for that reason is marked so that the last triage using it removes it (`handed_over`)
    rather than leaving it behind, since that triage did not make it."""
    try:
        import fcntl
    except ImportError:
        shutil.rmtree(folder, ignore_errors=True)
        return True
    folder = os.path.abspath(folder)
    lock = locks_of(folder)
    os.makedirs(os.path.dirname(lock), exist_ok=True)
    with open(lock + ".lock", "a") as making:
        fcntl.flock(making, fcntl.LOCK_EX)  # no one making it or taking it up meanwhile
        use = _IN_USE.pop(folder, None) or open(lock + ".use", "a")
        with use:  # this process's own shared lock converted, or a new one
            try:
                fcntl.flock(use, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if hand_over:
                    open(lock + HANDED_OVER, "a").close()
                return False
            shutil.rmtree(folder, ignore_errors=True)
            unmark(folder)
            return True


HANDED_OVER = ".handed-over"  # beside an environment's .lock and .use: its maker wanted it gone while another used it


def handed_over(folder: str) -> bool:
    """Whether the environment at `folder` was left by its maker to whoever uses it last (remove_unused)."""
    return os.path.exists(locks_of(os.path.abspath(folder)) + HANDED_OVER)


def unmark(folder: str) -> None:
    """The environment at `folder` no longer handed over: removed, or wanted (a triage's bracket, for its commands)."""
    try:
        os.remove(locks_of(os.path.abspath(folder)) + HANDED_OVER)
    except FileNotFoundError:
        pass


def legacy_keras(python: str) -> bool:
    """Whether the asv environment of interpreter `python` pins tf-keras: its workers then need TF_USE_LEGACY_KERAS=1
    (tf.keras is tf_keras there), whoever made it (asv, `run --keras tf_keras`, attribute's Keras 2 bridge)."""
    path = os.path.join(os.path.dirname(os.path.dirname(python)), "asv-env-info.json")
    try:
        requirements = read_json(path, "asv environment info").get("requirements") or {}
    except (UsageError, AttributeError):
        return False
    return any(package_of(name) == "tf-keras" for name in requirements)


def create(config: str, names: Sequence[str],
           progress: Optional[Callable[[str], None]] = None) -> List[Tuple[str, str]]:
    """Make the environments of `config` named `names` (as `envs` and `asv run -E` name them) where asv will look
    for them, with uv where it is installed (python_for): [(name, its interpreter)]. asv then reuses each: only
    the project is installed into it. An unknown name lists the valid ones before anything is made."""
    from .asvconf import matrix_entries
    from .errors import unknown

    entries = {e["name"]: e for e in matrix_entries(config)}
    for name in names:
        if name not in entries:
            raise unknown("environment", name, entries)
    made = []
    for name in names:
        entry = entries[name]
        python, found = python_for(config, entry["req"], progress, python=str(entry["python"]), here=False)
        if found != name:  # the naming of python_for and of the matrix must agree, or asv would make its own
            raise UsageError(f"{config}: the environment made for {name} is named {found}; asv would not reuse it.")
        made.append((name, python))
    return made


def python_for_tf(config: str, version: str, progress: Optional[Callable[[str], None]] = None,
                  python: Optional[str] = None, pins: Optional[dict] = None, keras: str = "",
                  backend: str = "") -> str:
    """The interpreter of `config`'s asv environment for TF `version` on Python `python` (default the config's).

    `pins` ({package: version}) replace or add to the release's; `keras` is a Keras version to pin, or
    'tf_keras' (the tf-keras release of the TF minor, for TF_USE_LEGACY_KERAS=1); `backend` jax or torch adds that
    framework as the config's backend entry pins it (asvconf.backend_pins).
    """
    from . import nightlies

    if progress and nightlies.is_nightly(version):  # which nightly, said before its environment is made
        chosen, note = nightlies.resolve_tf(version, python or releases.config_python(includes(config)))
        progress(f"{chosen.describe()}" + (f": {note}" if note else ""))
    if progress and keras and nightlies.is_nightly(keras):
        chosen, note = nightlies.pick_keras(keras, python or releases.config_python(includes(config)))
        progress(f"Keras {chosen.describe()}" + (f": {note}" if note else ""))
    reqs, no_deps = requirements_with(config, version, python, pins, keras, backend)
    extra = (no_deps,) if no_deps else ()  # the signature of python_for before no_deps, where nothing is forced
    interpreter_path, _ = python_for(config, reqs, progress, python, *extra)
    return interpreter_path


def requirements_with(config: str, version: str, python: Optional[str] = None, pins: Optional[dict] = None,
                      keras: str = "", backend: str = "") -> Tuple[dict, List[str]]:
    """(pins, names always installed with --no-deps) of TF `version`'s environment with `pins`, `keras` and a Keras 3
    `backend` (jax, torch: its framework pinned as the config's backend entry pins it) applied.

    `version` may be a TF nightly ('nightly', 'nightly:DATE', or a nightly's version: kerasbench.nightlies) and
    `keras` a keras-nightly ('nightly', 'nightly:DATE' or its version), which replaces the release's Keras."""
    from . import nightlies

    entries = includes(config)
    python_here = python or releases.config_python(entries)
    if nightlies.is_nightly(version):
        reqs = nightlies.tf_requirements(nightlies.resolve_tf(version, python_here)[0], entries, python_here)
    else:
        reqs = releases.requirements_for(version, entries, python=python)
    no_deps: List[str] = []
    names = {package_of(name): name for name in reqs}
    for name, pinned in (pins or {}).items():
        if package_of(name) == "tensorflow" and "tensorflow-cpu" in reqs:  # the release's full build instead
            del reqs[names.pop("tensorflow-cpu")]
        reqs[names.get(package_of(name), name)] = pinned
    if keras == "tf_keras":
        if releases.version_key(version)[:2] < (2, 16):
            raise UsageError(f"tf_keras is the Keras 2 of TF 2.16 and later; TF {version} ships Keras 2 as keras.")
        # as asv.matrix.json pins it (asv's pip would otherwise add the `tensorflow` wheel tf-keras requires)
        reqs[TF_KERAS_PIN] = "--no-deps " + releases.tf_keras_for(version, python or releases.config_python(entries))
        no_deps.append(TF_KERAS_PIN)
    elif keras and nightlies.is_nightly(keras):
        reqs = nightlies.with_keras_nightly(reqs, nightlies.pick_keras(keras, python_here)[0])
    elif keras:
        reqs["keras"] = keras
    if backend in BACKEND_PINS:
        if keras == "tf_keras" or (not nightlies.is_nightly(version) and releases.version_key(version)[:2] < (2, 16)):
            raise UsageError(f"The {backend} backend is Keras 3's; TF {version} with {keras or 'its Keras'} is Keras 2 "
                             "(Keras 3 ships with TF 2.16 and later).")
        reqs.update(backend_pins(config, backend))
    return reqs, no_deps


class Ahead:
    """Environments made one at a time in a background thread, ahead of the step that needs them: triage queues the
    next bisection step's while this one measures; attribute asks for each of its rows' in turn. Keys name them
    (a version, a row's label): `pins(key)` gives a key's pins (asked in that thread: it may read the package index),
    `note(key, text)` hears its creation's progress.

    `want(keys)` queues them; `get(key)` waits for one, (interpreter, environment name), queued first if it was not;
    a creation that failed raises its error there, only when that key is needed. `stop()` ends a creation under
    way (its folder is removed, as after any interrupted one) and drops the queued ones (so does leaving a `with`
    block); `made()` is {key: interpreter} of the ones made.
    """

    def __init__(self, config: str, pins: Callable[[str], dict], note: Callable[[str, str], None],
                 python: Optional[str] = None):
        from concurrent.futures import ThreadPoolExecutor

        self.config, self.pins, self.note, self.python = config, pins, note, python
        self.futures: dict = {}
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kerasbench-env")

    def _make(self, key: str) -> Tuple[str, str]:
        return python_for(self.config, self.pins(key), lambda text: self.note(key, text), self.python)

    def want(self, keys: Sequence[str]) -> None:
        """Queue the environments of `keys` (those not queued yet)."""
        for key in keys:
            if key not in self.futures:
                self.futures[key] = self.pool.submit(self._make, key)

    def get(self, key: str) -> Tuple[str, str]:
        """(interpreter, environment name) of `key`, made now if it was not queued."""
        from concurrent.futures import TimeoutError as Pending

        self.want([key])
        while True:
            try:
                return self.futures[key].result(timeout=0.2)  # short waits: the main thread takes Ctrl-C in between
            except Pending:
                continue

    def made(self) -> dict:
        """{key: interpreter} of the environments made (not cancelled, not failed)."""
        return {key: f.result()[0] for key, f in self.futures.items()
                if f.done() and not f.cancelled() and f.exception() is None}

    def __enter__(self) -> "Ahead":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """Drop the queued creations and end the one under way (asvconf removes its half-made folder)."""
        for future in self.futures.values():
            future.cancel()
        if not all(f.done() for f in self.futures.values()):
            end_creations()
        self.pool.shutdown(wait=True, cancel_futures=True)
