"""Reading kerasbench's asv configurations: where they are, a matrix's entries (the TF package and the Python they
name), the names of pins.

Naming and making the environment of a set of pins is kerasbench.environment's."""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Optional, Tuple

from ._compat import BACKEND_VAR, FRAMEWORKS
from .column import Column
from .errors import UsageError
from .files import CONFIG_LIMIT, clone_dir, from_clone, read_json, user_cache


CONFIG_VAR = "KERASBENCH_CONFIG"  # an asv config file, or a folder holding kerasbench's configs (a clone)
MATRIX, DEFAULT_CONFIG = "asv.matrix.json", "asv.conf.json"


def tf_package(includes: List[Dict[str, Any]]) -> str:
    """'tensorflow-cpu' or 'tensorflow': the TF distribution an asv config's matrix installs."""
    for include in includes:
        for name in include.get("req", {}):
            if name in ("tensorflow-cpu", "tensorflow"):
                return name
    raise UsageError("The asv config pins no tensorflow or tensorflow-cpu in its matrix 'include' entries.")


def config_python(includes: List[Dict[str, Any]]) -> str:
    """The Python an asv config's matrix entries are for (their `python`; 3.11 when unsaid)."""
    return str(includes[0].get("python") or "3.11") if includes else "3.11"


def shipped_configs() -> str:
    """The folder of the configs an installed wheel carries (the package kerasbench.shipped_configs: pyproject.toml
    maps the clone's own asv.conf.json, asv.matrix.json and asv.gpu.json there; a clone has no such folder)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "shipped_configs")


def is_shipped(config: str) -> bool:
    """Whether `config` is one of the installed package's configs (its environments then live in the user's cache)."""
    return os.path.dirname(os.path.abspath(config)) == shipped_configs()


def find_config(given: Optional[str], default: str = MATRIX, installed: bool = True) -> str:
    """The asv config a command uses: --config, else $KERASBENCH_CONFIG, else `default` in the current folder,
    else in the clone kerasbench was imported from, else (`installed`) the one the installed package carries; a
    one-line UsageError naming every place searched.

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
    places = [("the current folder", os.getcwd())]
    if from_clone():
        places.append(("the clone kerasbench was imported from", clone_dir()))
    elif installed:
        places.append(("the installed kerasbench package", shipped_configs()))
    for where, folder in places:
        path = os.path.join(folder, default)
        if os.path.isfile(path):
            return path if folder != os.getcwd() else default
        searched.append(f"{where} ({folder})")
    raise UsageError(f"No asv config {default} found: searched --config (not given), {', '.join(searched)}. "
                     f"Give --config PATH, or set {CONFIG_VAR} to a clone of kerasbench or a config file.")


def env_dir(config: str) -> str:
    """The folder of `config`'s asv environments: its env_dir beside it; for a config the installed package carries
    (read-only, no clone to hold them), the user's cache, ~/.cache/kerasbench/env (files.user_cache)."""
    if is_shipped(config):
        return user_cache("env")
    return os.path.join(os.path.dirname(os.path.abspath(config)), read_config(config).get("env_dir", "env"))


RELEASES_EXTRA = "pip install 'kerasbench[releases]'"


def asv_module(name: str = "asv") -> Any:
    """asv's module `name`, imported; where asv is not installed (kerasbench installed without its `releases` extra),
    a one-line UsageError saying what needs it and what to install."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as e:
        if (e.name or "").split(".")[0] != "asv":
            raise
        raise UsageError(f"asv is not installed here: TF release environments (run --tf, triage, attribute, ablate "
                         f"--tf, envs, publish, measure(tf=...)) need it: {RELEASES_EXTRA}.") from None


ASV_CONFIG_VERSION = 1  # the config format asv 0.6 reads (asv.config.Config.api_version)
# The type of each key asv or kerasbench reads from a config, when present: a wrong one is asv's traceback (or
# kerasbench's) later. "text list": a list of strings; "objects": a list of objects.
CONFIG_TYPES = {
    **dict.fromkeys(("project", "project_url", "repo", "repo_subdir", "dvcs", "environment_type", "env_dir",
                     "results_dir", "html_dir", "benchmark_dir", "launch_method", "show_commit_url"), "text"),
    **dict.fromkeys(("branches", "pythons", "build_command", "install_command", "uninstall_command",
                     "conda_channels", "plugins"), "text list"),
    **dict.fromkeys(("include", "exclude"), "objects"),
    **dict.fromkeys(("matrix", "regressions_first_commits", "regressions_thresholds"), "object"),
    **dict.fromkeys(("install_timeout", "default_benchmark_timeout"), "number"),
    **dict.fromkeys(("build_cache_size", "hash_length"), "integer"),
}
INCLUDE_TYPES = {"python": "text", "req": "object", "env": "object", "env_nobuild": "object"}  # an include entry's
_EXPECTED = {"text": "a string", "text list": "a list of strings", "objects": "a list of objects",
             "object": "an object", "number": "a number", "integer": "an integer"}
_ITEM = {"text list": "text", "objects": "object"}  # what each item of a list kind is


def json_kind(value: object) -> str:
    """What a JSON value is, in JSON's words: 'a string', 'an array', 'null'…"""
    if isinstance(value, bool):
        return "a boolean"
    for types, name in ((str, "a string"), (int, "an integer"), (float, "a number"), (list, "an array"),
                        (dict, "an object")):
        if isinstance(value, types):
            return name
    return "null"


def _fits(value: object, kind: str) -> bool:
    if kind in _ITEM:
        return isinstance(value, list) and all(_fits(v, _ITEM[kind]) for v in value)
    if kind in ("number", "integer"):
        numbers = int if kind == "integer" else (int, float)
        return isinstance(value, numbers) and not isinstance(value, bool)
    return isinstance(value, str if kind == "text" else dict)


def config_problem(value: object) -> Optional[str]:
    """What is wrong with the shape of a parsed asv config (what asv needs, the types of the keys read), else None."""
    if not isinstance(value, dict):
        return f"it is {json_kind(value).replace('an array', 'a JSON array')}, expected an object"
    version = value.get("version")
    if "version" not in value:
        return f"it has no 'version' (asv needs \"version\": {ASV_CONFIG_VERSION})"
    if version != ASV_CONFIG_VERSION or isinstance(version, bool):
        newer = _fits(version, "integer") and version > ASV_CONFIG_VERSION
        return (f"'version' is {json.dumps(version)[:40]}, expected {ASV_CONFIG_VERSION}"
                + (" (a newer format than this asv reads: update asv)" if newer else ""))
    if not value.get("repo"):
        said = "has no 'repo'" if "repo" not in value else f"has an empty 'repo' ({json.dumps(value['repo'])[:40]})"
        return f"it {said} (asv needs the project's repository, e.g. \"repo\": \".\")"
    for key, kind in CONFIG_TYPES.items():
        if key in value and not _fits(value[key], kind):
            if kind in _ITEM and isinstance(value[key], list):  # a list, one of whose items is not: say which
                i = next(i for i, item in enumerate(value[key]) if not _fits(item, _ITEM[kind]))
                return f"'{key}'[{i}] is {json_kind(value[key][i])}, expected {_EXPECTED[_ITEM[kind]]}"
            return f"'{key}' is {json_kind(value[key])}, expected {_EXPECTED[kind]}"
    if value.get("branches") == []:
        return "'branches' is empty (asv needs one, or leave the key out)"
    for i, entry in enumerate(value.get("include") or []):
        for key, kind in INCLUDE_TYPES.items():
            if key in entry and not _fits(entry[key], kind):
                return f"'include'[{i}].{key} is {json_kind(entry[key])}, expected {_EXPECTED[kind]}"
    return None


def read_config(config: str) -> dict:
    """An asv config file as a dict (asv's JSON allows // comment lines): a regular file of at most
    files.CONFIG_LIMIT (a FIFO or /dev/zero is refused, not read), of the shape asv reads (config_problem: an object
    with 'version' 1 and a 'repo', each key asv or kerasbench reads of its type); a one-line UsageError naming the
    file and what is wrong otherwise, for every command that reads one (envs, run --tf, publish, triage, attribute)."""
    value = read_json(config, "asv config", CONFIG_LIMIT, comments=True)
    problem = config_problem(value)
    if problem:
        raise UsageError(f"Invalid asv config {config}: {problem}.")
    return value


def environments_config(config: str) -> dict:
    """read_config of a config whose environments are named or made (envs, run --tf, triage, attribute): also a
    one-line UsageError when it has no environment_type (asv's RuntimeError otherwise; publish needs none)."""
    value = read_config(config)
    if not value.get("environment_type"):
        raise UsageError(f"Invalid asv config {config}: it has no 'environment_type' (asv needs it to name and make "
                         f"its environments, e.g. \"environment_type\": \"virtualenv\").")
    return value


def load_config(config: str) -> object:
    """asv's Config of `config`, its folders (env_dir, results_dir, html_dir) made absolute against the config's
    own folder: asv reads them against the current folder (it is run from the clone), kerasbench from anywhere; a
    config the installed package carries has them in the user's cache (~/.cache/kerasbench/env, …)."""
    environments_config(config)  # asv opens it as it is: a FIFO would hang it, /dev/zero never end
    conf = asv_module("asv.config").Config.load(config)
    base = os.path.dirname(os.path.abspath(config))
    for key in ("env_dir", "results_dir", "html_dir"):
        value = getattr(conf, key, None)
        if is_shipped(config):  # the installed package's: its folders in the user's cache, not in site-packages
            setattr(conf, key, user_cache(key[:-len("_dir")]))
        elif isinstance(value, str) and not os.path.isabs(value):
            setattr(conf, key, os.path.join(base, value))
    return conf


def html_dir_of(config: str) -> str:
    """The folder `asv publish` writes the dashboard to (the config's html_dir, beside the config)."""
    return os.path.join(os.path.dirname(os.path.abspath(config)), read_config(config).get("html_dir", "html"))


def matrix_entries(config: str) -> List[dict]:
    """Every environment of `config`'s matrix as asv names it: {name, python, req, env, axis}, in the config's order.

    Read with asv's own matrix expansion and naming, without looking for the interpreters (asv skips an
    environment whose Python it does not find on PATH; a fan-out's plan must still list it: each job
    installs its own Python). `axis` is '' for a TF release's entry, else what the entry varies (axis_of).
    """
    environment = asv_module("asv.environment")
    home = config_python(read_config(config).get("include") or [])  # a readable error first
    conf = load_config(config)
    found = []
    for combo in environment.iter_matrix(conf.environment_type, conf.pythons, conf):
        python, reqs, tagged = environment._parse_matrix_entries(combo)
        named = {k: v for k, v in reqs.items() if k not in ASV_BASE}  # asv installs these apart, unnamed
        name = environment.get_env_name(conf.environment_type, python, named, tagged)
        variables = {key: value for (_, key), value in tagged.items()}
        found.append({"name": name, "python": python, "req": dict(reqs), "env": variables,
                      "axis": axis_of({"python": python, "req": reqs, "env": variables}, home)})
    return found


ASV_BASE = ("pip+build", "pip+asv_runner", "pip+pympler")  # asv's own requirements: not part of a name


def axis_of(entry: dict, home_python: str) -> str:
    """What a matrix entry varies besides the TF release: '' (a release's own entry), 'tf_keras' (Keras 2 on a
    Keras 3 TF), 'jax' or 'torch' (Keras 3 on that backend), 'py3.12' (another Python than the config's), or two of
    them joined with '+'."""
    axes = []
    variables = {**(entry.get("env") or {}), **(entry.get("env_nobuild") or {})}
    if variables.get(LEGACY_KERAS_VAR) == "1" or any(package_of(name) == "tf-keras" for name in entry.get("req", {})):
        axes.append("tf_keras")
    if variables.get(BACKEND_VAR) in BACKEND_PINS:
        axes.append(variables[BACKEND_VAR])
    if str(entry.get("python") or home_python) != home_python:
        axes.append(f"py{entry['python']}")
    return "+".join(axes)


def matrix_json(config: str) -> dict:
    """The environments of `config` as GitHub Actions' matrix {"include": [...]}: one entry per environment
    (name for `asv run -E`, tf, tf_package, keras, keras_package, python, device, axis, label), nothing that
    depends on this machine (not even which Pythons it has)."""
    found = []
    for entry in matrix_entries(config):
        reqs = entry["req"]
        package = "tensorflow-cpu" if "tensorflow-cpu" in reqs else "tensorflow"
        label = reqs.get(package) or "?"
        found.append({"name": entry["name"], "tf": reqs.get(package), "tf_package": package, "keras": reqs.get("keras"),
                      "keras_package": "tf_keras" if "tf_keras" in entry["axis"] else "keras",
                      "python": entry["python"], "device": entry["env"].get("KERASBENCH_DEVICE", "cpu"),
                      "axis": entry["axis"], "label": str(Column(label, entry["axis"])),
                      "config": os.path.basename(config)})
    return {"include": found}


def includes(config: str) -> list:
    """The TF releases' matrix `include` entries of an asv config (each: python and exact `req` pins).

    Entries of another axis (axis_of: tf_keras, another Python) are left out: triage bisects, and `run --tf`
    derives pins from, one entry per release. Those entries hold what requirements_with derives for them
    (`run --tf V --keras tf_keras`, `--python 3.12`), so both use the same environment.
    """
    every = environments_config(config).get("include") or []
    home = config_python(every)
    entries = [entry for entry in every if not axis_of(entry, home)]
    if not entries:
        raise UsageError(f"The asv config {config} has no matrix 'include' entries: "
                         "use asv.matrix.json or asv.gpu.json.")
    return entries


INSTALLER_ONLY = ("pip+asv_runner",)  # asv's runner: in every environment, never what is measured


def split_pin(name: str, value: str) -> Tuple[str, str, List[str]]:
    """(package, version, pip flags) of an asv `req` pin: ('pip+tf-keras', '--no-deps 2.21.0') ->
    ('tf-keras', '2.21.0', ['--no-deps']) (asv hands a pip+ value's flags to pip as they are; the name as given)."""
    words = str(value).split()
    flags = [w for w in words if w.startswith("-")]
    version = next((w.lstrip("=") for w in words if not w.startswith("-")), "")
    return name[4:] if name.startswith("pip+") else name, version, flags


def canonical(name: str) -> str:
    """A package name as the registry compares it (PEP 503): tf_keras, TF-Keras -> tf-keras."""
    return re.sub(r"[-_.]+", "-", name).lower()


def package_of(name: str) -> str:
    """The registry name of an asv `req` key: 'pip+tf_keras' -> 'tf-keras'."""
    return canonical(name[4:] if name.startswith("pip+") else name)


# one module under several distributions' names: a release's and a nightly's (CPU or full build) TF, Keras's
DISTRIBUTIONS = (("tensorflow", "tensorflow-cpu", "tf-nightly", "tf-nightly-cpu"), ("keras", "keras-nightly"))


def distributions_of(name: str) -> Tuple[str, ...]:
    """Every distribution's name of the module `name` installs (tensorflow-cpu -> TF's four), or (name,)."""
    return next((family for family in DISTRIBUTIONS if package_of(name) in family), (package_of(name),))


def across_distributions(good: Dict[str, str], bad: Dict[str, str]) -> List[Tuple[str, str]]:
    """(the good side's name, the bad side's) of each module two pin sets name under different distributions (a
    release's tensorflow-cpu and keras against a nightly's tf-nightly-cpu and keras-nightly; a nightly's CPU build
    against its full one): moved into the other side's environment, it would be a second copy, not a swap."""
    crossed = []
    for family in DISTRIBUTIONS:
        mine = sorted({package_of(k) for k in good} & set(family))
        theirs = sorted({package_of(k) for k in bad} & set(family))
        if mine and theirs and mine != theirs:
            crossed.append((mine[0], theirs[0]))
    return crossed


# Keras 3's other backends as matrix entries: KERAS_BACKEND in the entry's env, the framework's packages in its req
BACKEND_PINS = FRAMEWORKS


def backend_pins(config: str, backend: str) -> Dict[str, str]:
    """The framework pins of `backend` (jax and jaxlib, or torch) from `config`'s matrix entry for that backend: what
    `run --tf V --backend jax` adds to a release's environment. A UsageError where the config has no such entry."""
    for entry in read_config(config).get("include") or []:
        variables = {**(entry.get("env") or {}), **(entry.get("env_nobuild") or {})}
        if variables.get(BACKEND_VAR) == backend:
            pins = {name: value for name, value in (entry.get("req") or {}).items()
                    if package_of(name) in BACKEND_PINS[backend]}
            if pins:
                return pins
    raise UsageError(f"The asv config {config} has no matrix entry for Keras' {backend} backend (an entry whose env "
                     f"sets {BACKEND_VAR}={backend} and pins {' and '.join(BACKEND_PINS[backend])}): add one, as "
                     "asv.matrix.json does.")


TF_KERAS_PIN = "pip+tf-keras"  # the req key of tf-keras: its value says --no-deps (asv's pip, kerasbench's uv)
LEGACY_KERAS_VAR = "TF_USE_LEGACY_KERAS"  # "1": tf.keras is the tf-keras package (Keras 2) on TF >= 2.16


# The package names in the installer's (uv's) reason for refusing a set of pins: the dependency, and the pin that
# requires it (install.forced_pins forces them; attribute's groups move them together).
REASON_PATTERNS = (re.compile(r"depends on ([A-Za-z0-9][A-Za-z0-9._-]*)"),
                   re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==\S+ depends on"))


