"""Reading kerasbench's asv configurations: where they are, a matrix's entries, the names of pins.

Naming and making the environment of a set of pins is kerasbench.environment's."""

from __future__ import annotations

import os
import re
from typing import List, Optional, Tuple

from . import releases
from .errors import UsageError
from .files import CONFIG_LIMIT, clone_dir, read_json


CONFIG_VAR = "KERASBENCH_CONFIG"  # an asv config file, or a folder holding kerasbench's configs (a clone)
MATRIX, DEFAULT_CONFIG = "asv.matrix.json", "asv.conf.json"


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
    """An asv config file as a dict (asv's JSON allows // comment lines): a regular file of at most
    files.CONFIG_LIMIT (a FIFO or /dev/zero is refused, not read); a one-line UsageError naming it otherwise."""
    value = read_json(config, "asv config", CONFIG_LIMIT, comments=True)
    if not isinstance(value, dict):
        raise UsageError(f"Cannot parse asv config {config}: expected a JSON object, found {type(value).__name__}.")
    return value


def load_config(config: str) -> object:
    """asv's Config of `config`, its folders (env_dir, results_dir, html_dir) made absolute against the config's
    own folder: asv reads them against the current folder (it is run from the clone), kerasbench from anywhere."""
    from asv.config import Config

    read_config(config)  # asv opens it as it is: a FIFO would hang it, /dev/zero never end
    conf = Config.load(config)
    base = os.path.dirname(os.path.abspath(config))
    for key in ("env_dir", "results_dir", "html_dir"):
        value = getattr(conf, key, None)
        if isinstance(value, str) and not os.path.isabs(value):
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
    from asv import environment

    home = releases.config_python(read_config(config).get("include") or [])  # a readable error first
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
    Keras 3 TF), 'py3.12' (another Python than the config's), or both joined with '+'."""
    axes = []
    variables = {**(entry.get("env") or {}), **(entry.get("env_nobuild") or {})}
    if variables.get(LEGACY_KERAS_VAR) == "1" or any(package_of(name) == "tf-keras" for name in entry.get("req", {})):
        axes.append("tf_keras")
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
                      "axis": entry["axis"], "label": f"{label}+{entry['axis']}" if entry["axis"] else label,
                      "config": os.path.basename(config)})
    return {"include": found}


def includes(config: str) -> list:
    """The TF releases' matrix `include` entries of an asv config (each: python and exact `req` pins).

    Entries of another axis (axis_of: tf_keras, another Python) are left out: triage bisects, and `run --tf`
    derives pins from, one entry per release. Those entries hold what requirements_with derives for them
    (`run --tf V --keras tf_keras`, `--python 3.12`), so both use the same environment.
    """
    every = read_config(config).get("include") or []
    home = releases.config_python(every)
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


TF_KERAS_PIN = "pip+tf-keras"  # the req key of tf-keras: its value says --no-deps (asv's pip, kerasbench's uv)
LEGACY_KERAS_VAR = "TF_USE_LEGACY_KERAS"  # "1": tf.keras is the tf-keras package (Keras 2) on TF >= 2.16


