"""TensorFlow releases on the package registry, and the pins an asv environment needs for each.

The asv matrix (asv.matrix.json) pins the latest patch of every minor release. Triage also
bisects over the patch releases in between; for those, the pins follow the matrix's own rule:
the Keras a TF release shipped with is the newest Keras of its line (2.<minor> up to TF 2.15,
3.x after) uploaded before that TF wheel, and numpy/scipy are those of the same minor's entry.

The registry is PyPI's JSON API, or a folder of <package>.json files (tests, offline mirrors):
KERASBENCH_PYPI=https://pypi.org/pypi (default) or a path.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any, Dict, List, Optional
import urllib.error
import urllib.request

from .errors import UsageError

PYPI = "https://pypi.org/pypi"
FINAL = re.compile(r"^\d+\.\d+\.\d+$")  # no rc, dev or post releases
WHEEL = re.compile(r"-cp311-cp311-manylinux[^-]*x86_64")  # what pip installs here (CPython 3.11, Linux x86-64)


def version_key(version: str) -> tuple:
    """'2.12.1' -> (2, 12, 1): the one sort key of TF versions; non-numeric parts sort last."""
    return tuple(int(p) if p.isdigit() else math.inf for p in re.split(r"[.+-]", str(version)))


def index(package: str) -> Dict[str, Any]:
    """The registry's JSON document of `package` (all releases and their files)."""
    source = os.environ.get("KERASBENCH_PYPI") or PYPI
    if "://" not in source:
        path = os.path.join(source, f"{package}.json")
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError) as e:
            raise UsageError(f"Cannot read the package index {path}: {getattr(e, 'strerror', None) or e}.") from None
    url = f"{source.rstrip('/')}/{package}/json"
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return json.load(response)
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise UsageError(f"Cannot read the package index {url}: {getattr(e, 'reason', None) or e}.") from None


def installable(doc: Dict[str, Any], wheel: re.Pattern = WHEEL) -> Dict[str, str]:
    """{version: upload time} of the final releases with a wheel pip can install here (not yanked)."""
    found = {}
    for version, files in doc.get("releases", {}).items():
        times = [f["upload_time"] for f in files if wheel.search(f["filename"]) and not f.get("yanked")]
        if FINAL.match(version) and times:
            found[version] = min(times)
    return found


def keras_for(tf_version: str, tf_uploaded: str, keras_doc: Dict[str, Any]) -> str:
    """The Keras a TF release shipped with: the newest of its line uploaded before the TF wheel."""
    major, minor = version_key(tf_version)[:2]
    line = f"2.{minor}." if (major, minor) <= (2, 15) else "3."
    wheels = installable(keras_doc, re.compile(r"py3-none-any\.whl$"))
    candidates = {v: t for v, t in wheels.items() if v.startswith(line)}
    before = [v for v, t in candidates.items() if t <= tf_uploaded]
    pool = before or list(candidates)  # a TF uploaded before its Keras (2.x): the first of the line
    if not pool:
        raise UsageError(f"No Keras {line}x release found for TF {tf_version} on the package index.")
    return max(pool, key=version_key) if before else min(pool, key=version_key)


def tf_package(includes: List[Dict[str, Any]]) -> str:
    """'tensorflow-cpu' or 'tensorflow': the TF distribution an asv config's matrix installs."""
    for include in includes:
        for name in include.get("req", {}):
            if name in ("tensorflow-cpu", "tensorflow"):
                return name
    raise UsageError("The asv config pins no tensorflow or tensorflow-cpu in its matrix 'include' entries.")


def requirements_for(version: str, includes: List[Dict[str, Any]], package: Optional[str] = None,
                     tf_doc: Optional[Dict[str, Any]] = None,
                     keras_doc: Optional[Dict[str, Any]] = None) -> Dict[str, str]:
    """asv `req` pins for TF `version`: the config's own entry, or one derived for a patch release."""
    package = package or tf_package(includes)
    for include in includes:
        if include.get("req", {}).get(package) == version:
            return dict(include["req"])
    minor = version_key(version)[:2]
    same_minor = [i["req"] for i in includes if version_key(i["req"][package])[:2] == minor]
    if not same_minor:
        known = ", ".join(sorted((i["req"][package] for i in includes), key=version_key))
        raise UsageError(f"TF {version}: no entry of its minor release in the asv config (it has {known}).")
    uploaded = installable(tf_doc or index(package)).get(version)
    if uploaded is None:
        raise UsageError(f"TF {version}: no installable {package} release on the package index (CPython 3.11, Linux).")
    reqs = dict(same_minor[0])
    reqs[package] = version
    reqs["keras"] = keras_for(version, uploaded, keras_doc or index("keras"))
    return reqs


def candidates(good: str, bad: str, includes: List[Dict[str, Any]], patches: bool = True, package: Optional[str] = None,
               tf_doc: Optional[Dict[str, Any]] = None) -> List[str]:
    """The TF versions from `good` to `bad` (inclusive, oldest first) that triage may try.

    patches=False: only the versions the asv config pins (the latest patch of each minor).
    """
    package = package or tf_package(includes)
    pinned = {i["req"][package] for i in includes}
    if patches:
        minors = {version_key(p)[:2] for p in pinned}  # the releases the config can give pins for
        known = {v for v in installable(tf_doc or index(package)) if version_key(v)[:2] in minors}
    else:
        known = pinned
    for name, value in (("good", good), ("bad", bad)):
        if value not in known:
            raise UsageError(f"Unknown TF version. Received: {name}={value!r}. Expected one of: "
                             f"{', '.join(sorted(known, key=version_key))}.")
    low, high = sorted((good, bad), key=version_key)
    between = sorted((v for v in known if version_key(low) <= version_key(v) <= version_key(high)), key=version_key)
    return between if version_key(good) <= version_key(bad) else between[::-1]
