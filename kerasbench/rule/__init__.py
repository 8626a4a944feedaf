"""The verdict rule, in one room: what a measured series and pair are judged to say, and which version of the rule
said it. Everything a change of the rule touches is here (docs/layout.md, "Changing the verdict rule").

  series.py    one series judged against its margin at its count's resolution (verdict, persistence, step,
               settling, the count needed), repeats combined, a pair's one verdict and what grew
  pair.py      a pair's series judged over its repeats, all at one floor
  counts.py    the counts a run looks at and each look's level; the floor between two calibrated counts
  looks.py     a budgeted run's looks, their plan and level, the runner's Decider and the one stop rule
  floors.py    the margin (given or default) and the resolution ("floor") at the count judged, and where each
               came from (calibrated, TF's settling, default)
  settling.py  TF's own heap settling: derived from the references, read, doubled on another TF/Keras
  scale.py     a middle build placed on the scale of a change (triage's and attribute's classes)
  version.py   the rule's version (PROTOCOL_VERSION) and the stamp a record, calibration or atlas carries

The estimators it stands on are kerasbench.stats'; the records and metrics stand below it (they import nothing
from here), the runner, the worker's loop, the summary, score and the commands above it.

The version is imported with the package (asv's registries read it and must stay free of numpy); everything else
on first use (`rule.judge`, `from kerasbench.rule import Decider`), from the module named here.
"""

from __future__ import annotations

import threading

from .version import PROTOCOL_VERSION as PROTOCOL_VERSION, one_version as one_version  # noqa: F401 (the namespace)
from .version import version_of as version_of, version_text as version_text  # noqa: F401

# What each module of the room gives the package's namespace (loaded on first use: numpy and scipy come with it).
_NAMES = {
    "series": ("across_text", "CLEAR_OVER_MARGIN", "combine", "DEFAULT_RESOLUTION", "detects", "Floor",
               "growth_kind", "GROWTH_KINDS", "judge", "Judgement", "MARGINS", "needed_count", "pair_verdict",
               "PY_BLOCK_MAX", "SHAPES", "verdict", "VERDICTS", "widened",),
    "counts": ("alpha", "alpha_for", "floor_between", "look_points", "LOOK_RATIO", "planned_looks",),
    "floors": ("calibration_stamp", "DEFAULT_FLOOR", "DEFAULT_MARGIN", "fixed_floors", "margin_for",
               "floor_at", "floor_for", "floor_stamp", "FloorAt",
               "GIVEN_FLOOR", "SERIES", "spec_floors", "stamp_kind",),
    "looks": ("Decider", "early_stop", "held_flat", "LOOK_GROWTH", "LookPlan", "PLAN_SLACK", "StopRule",),
    "pair": ("judge_results", "Judged", "period_of",),
    "scale": ("place", "Position", "SCALE_NEAR", "SCALE_Z",),
}


# (thread, module) being imported now: `from . import x` asks hasattr first, which must say no in that thread only
# (the runner watches its workers from threads; another thread asking meanwhile waits on the import's own lock).
_LOADING: set = set()


def __getattr__(name: str):
    if name == "ALPHA":
        from ..stats import ALPHA

        return ALPHA
    module = name if name in _NAMES or name == "settling" else \
        next((m for m, names in _NAMES.items() if name in names), None)
    loading = (threading.get_ident(), module)
    if module is None or loading in _LOADING:
        raise AttributeError(f"module 'kerasbench.rule' has no attribute {name!r}")
    _LOADING.add(loading)
    try:
        if module == "series":
            from . import series as found
        elif module == "counts":
            from . import counts as found
        elif module == "floors":
            from . import floors as found
        elif module == "looks":
            from . import looks as found
        elif module == "pair":
            from . import pair as found
        elif module == "scale":
            from . import scale as found
        else:
            from . import settling as found
    finally:
        _LOADING.discard(loading)
    value = found if name == module else getattr(found, name)
    globals()[name] = value  # asked once: later reads do not come here
    return value


__all__ = sorted(["ALPHA", "settling", "PROTOCOL_VERSION", "one_version", "version_of", "version_text",
                  *(n for names in _NAMES.values() for n in names)], key=str.lower)
