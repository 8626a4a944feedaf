"""Version texts, read without asking anything: the one sort key of TF and Keras versions (and compare's sides), and
whether a text names a nightly.

Pure (packaging and the text only): compare, triage, report and atlas sort by it without importing the package-index
client (kerasbench.releases, kerasbench.nightlies), which re-export these names where they were first defined.
"""

from __future__ import annotations

import math
import re
from typing import Optional

NIGHTLY_WORD = "nightly"  # --tf/--good/--bad nightly, nightly:YYYY-MM-DD
NIGHTLY_DEV = re.compile(r"(?:\.dev|a)(\d{8})(\d{2})?$")  # TF's and Keras' .devYYYYMMDD[HH], TensorBoard's aYYYYMMDD


def version_key(version: str) -> tuple:
    """The one sort key of TF (and Keras) versions and of compare's sides: (major, minor, micro, stage, number,
    label), by PEP 440 (packaging): a nightly (2.22.0-dev20260905) before the release candidates of its release
    (2.15.0rc1), those before the release, a side's label (2.16.2+tf_keras) right after its release. [:2] is
    (major, minor). A string that is no version sorts by its numeric parts, other parts last."""
    from packaging.version import InvalidVersion, Version

    try:
        v = Version(str(version))
    except InvalidVersion:
        return tuple(int(p) if p.isdigit() else math.inf for p in re.split(r"[.+-]", str(version)))
    if v.pre is not None:
        stage = (1, {"a": 0, "b": 1, "rc": 2}[v.pre[0]] * 1_000_000 + v.pre[1])  # a < b < rc, then their number
    elif v.dev is not None:
        stage = (0, v.dev)
    else:
        stage = (2, v.post or 0)
    return (*(v.release + (0, 0, 0))[:3], *stage, 1 if v.local else 0)


def is_nightly(text: Optional[str]) -> bool:
    """Whether a --tf/--keras/--good/--bad value names a nightly ('nightly', 'nightly:DATE') or a nightly version."""
    return bool(text) and (text == NIGHTLY_WORD or text.startswith(NIGHTLY_WORD + ":")
                           or bool(NIGHTLY_DEV.search(text.replace("-", "."))))
