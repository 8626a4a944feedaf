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
