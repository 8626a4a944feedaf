"""The verdict rule, in one room: what a measured series and pair are judged to say, and which version of the rule
said it. Everything a change of the rule touches is here (docs/layout.md, "Changing the verdict rule").

  series.py    one series judged against its margin (margin_for: given or default) at its count's resolution
               (verdict, persistence, step, settling, the count needed), repeats combined, a pair's one verdict and
               what grew
  run.py       what the rule reads of a run (RunLike: RunSpec's fields, its period, whether it settles): the rule
               imports neither the spec nor the registries
  pair.py      a pair's series judged over its repeats, all at one floor
  counts.py    the counts a run looks at and each look's level; the floor between two calibrated counts
  looks.py     a budgeted run's looks, their plan and level, the runner's Decider and the one stop rule
  floors.py    the resolution ("floor") at the count judged, and where it came from (calibrated, TF's settling,
               default); the stored calibrations are kerasbench.calibration_store's
  settling.py  TF's own heap settling: derived from the references, read, doubled on another TF/Keras
  scale.py     a middle build placed on the scale of a change (triage's and attribute's classes)
  ../protocol.py  the rule's version (PROTOCOL_VERSION) and the stamp a record, calibration or atlas carries
                  (kept outside the package, so that asv's registries read it without the rule's numpy)

The estimators it stands on are kerasbench.stats'; the records and metrics stand below it (they import nothing
from here), the runner, the worker's loop, the summary, score and the commands above it.

Its names are the package's own, imported with it (numpy and scipy come with them). What must stay light, asv's
registries, imports `kerasbench.protocol` alone (the version, outside this package: importing a submodule runs
the package first).
"""

from __future__ import annotations

from . import settling as settling  # noqa: F401 (the namespace: rule.settling)
from .counts import (LOOK_RATIO, alpha, alpha_for, floor_between, look_points,  # noqa: F401 (the namespace)
                     planned_looks)
from .floors import (DEFAULT_FLOOR, DEFAULT_MARGIN, GIVEN_FLOOR, SERIES, FloorAt,  # noqa: F401
                     calibration_stamp, fixed_floors, floor_at, floor_for, floor_stamp, margin_for, spec_floors,
                     stamp_kind)
from .looks import LOOK_GROWTH, PLAN_SLACK, Decider, LookPlan, StopRule, early_stop, held_flat  # noqa: F401
from .pair import Judged, judge_results, period_of  # noqa: F401
from .scale import SCALE_NEAR, SCALE_Z, Position, place  # noqa: F401
from .series import (CLEAR_OVER_MARGIN, DEFAULT_RESOLUTION, GROWTH_KINDS, MARGINS, PY_BLOCK_MAX,  # noqa: F401
                     SHAPES, VERDICTS, Floor, Judgement, across_text, combine, detects, growth_kind, judge,
                     needed_count, pair_verdict, verdict, widened)
from ..protocol import PROTOCOL_VERSION as PROTOCOL_VERSION, one_version as one_version  # noqa: F401 (the namespace)
from ..protocol import version_of as version_of, version_text as version_text  # noqa: F401
from ..stats import ALPHA as ALPHA  # noqa: F401
