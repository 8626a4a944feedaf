"""Reading kerasbench's asv configurations: folders, and the environments a matrix defines."""

import json
import os

from .errors import UsageError


def load(config):
    """An asv config file as a dict (asv's JSON allows // comment lines)."""
    try:
        with open(config) as f:
            return json.loads("\n".join(line for line in f if not line.lstrip().startswith("//")))
    except OSError as e:
        raise UsageError(f"Cannot read asv config {config}: {e.strerror}.") from None
    except ValueError as e:
        raise UsageError(f"Cannot parse asv config {config}: {e}.") from None


def html_dir_of(config):
    return os.path.join(os.path.dirname(os.path.abspath(config)), load(config).get("html_dir", "html"))


def environments(config, tf=None):
    """[(asv environment name, {package: version})] of `config`, optionally only TF version `tf`."""
    from asv import environment
    from asv.config import Config

    load(config)  # a readable error for a missing or broken file, before asv's own
    conf = Config.load(config)
    found = []
    for env in environment.get_environments(conf, None, verbose=False):
        reqs = {name: version for name, version in env.requirements.items()}
        version = reqs.get("tensorflow-cpu") or reqs.get("tensorflow")
        if tf is None or version == tf:
            found.append((env.name, reqs))
    if tf is not None and not found:
        versions = sorted({r.get("tensorflow-cpu") or r.get("tensorflow") for _, r in environments(config)} - {None})
        raise UsageError(f"Unknown TF version for {config}. Received: tf={tf!r}. Expected one of: {', '.join(versions)}.")
    return found


def includes(config):
    """The matrix `include` entries of an asv config (each: python and exact `req` pins)."""
    entries = load(config).get("include") or []
    if not entries:
        raise UsageError(f"The asv config {config} has no matrix 'include' entries: use asv.matrix.json or asv.gpu.json.")
    return entries


def python_for(config, reqs, progress=None):
    """The interpreter of the asv environment of `config` with exactly `reqs`, created if missing.

    asv names and builds it (`asv run --config <config> -E <name>` reuses the same folder), so
    kerasbench has no environment manager of its own. The worker runs there with kerasbench on
    PYTHONPATH (it needs only numpy and TF from the environment).
    """
    from asv import environment
    from asv.config import Config

    load(config)
    conf = Config.load(config)
    python = next((i.get("python") for i in conf.include if "python" in i), None) or conf.pythons[0]
    # only this environment: exclude everything the (empty) matrix would add, include ours
    conf.matrix, conf.exclude, conf.include = {}, [{"python": ".*"}], [{"python": python, "req": dict(reqs)}]
    try:
        (env,) = environment.get_environments(conf, None, verbose=False)
    except ValueError:
        raise UsageError(f"The asv config {config} does not define one environment for {reqs}.") from None
    executable = os.path.join(env._path, "bin", "python")
    if not env.check_presence():
        if progress:
            progress(f"creating asv environment {env.name} (pip installs {len(reqs)} pinned packages, minutes)")
        try:
            env.create()
        except Exception as e:  # asv's own errors: pip's output is in asv's log
            raise UsageError(f"asv could not create environment {env.name}: {e}") from None
    return executable, env.name
