"""Compare records of one machine and one commit across TensorFlow versions, metric by metric.

Every cell (loop, strategy, metric, TF version) gets its value, its ratio to the baseline version
and a verdict read from the per-iteration series and the repeats, not from a bare ratio:

growth_per_iter   regressed when the new slope's 95% CI (Theil-Sen, spanning all repeats), widened
                  by the resolution of the count it was judged at (the record's floor), lies above
                  the baseline's widened one and the slopes differ by more than the margin; improved
                  the other way round; unchanged when both runs get the same verdict (grows, flat or
                  inconclusive) and the slopes differ by less than the margin or each lies in the
                  other's widened interval; else inconclusive. A
                  window of a few iterations (a model-building loop's first saw-tooth) is wide by its
                  resolution: never a "×1.8 regression" of two runs of one build.
peak_over_baseline, regressed / improved when the difference is at least 16 MiB and at least 3x the
retained          noise (the larger of the spread across repeats and the robust scatter, 1.4826 x MAD,
                  of each RSS series around its Theil-Sen line, from series of 8 or more iterations;
                  combined over both versions); unchanged below 16 MiB; inconclusive in between, or
                  when no noise can be measured (one repeat of a short series) or it measures 0: a
                  noise of 0 would pass any difference. The peak judged is the loop's own (its peak
                  over the post-warm-up baseline); the absolute peak (peak_loop) is shown beside it.
                  Not comparable where either pair grows and the runs stopped at counts more than
                  1.25x apart (a budgeted run stops once decided): what piles up grows with the
                  count, and the slope compares them.
*_traces          exact counts: any change is regressed (more) or improved (fewer); inconclusive
                  when the repeats of one version disagree. Runs of different lengths (a budgeted run
                  stops when decided) are compared per measured iteration instead (the count's series):
                  a change must add up to one trace over the shorter run; no series: inconclusive.
objects_per_iter  like peak_loop, with 25 objects/iteration and 2 % of the rate as the minimum and the
                  spread across repeats as the noise (one repeat: the counts are taken at face value).
seconds_per_iter  not comparable (with the reason) when either side measured pairs at once (jobs > 1),
                  when the 1-minute loads per CPU (os.getloadavg at each worker's start and end, the
                  larger) differ by more than 0.5, or when a side has one repeat and its machine was
                  loaded (> 1 per CPU) or its load was not recorded. Else: unchanged within a 1.5x
                  band; regressed / improved beyond it only when the per-iteration times of the two
                  versions are separated (one-sided Mann-Whitney p < 0.05); else inconclusive.
any metric        not comparable when the two records' hardware fingerprints differ (CPU model, cores,
                  memory, GPU, allocator, glibc: kerasbench.machine), whatever the figures say; the why
                  names what differs and what the figures alone read. Never regressed or improved, so
                  `--fail-on regressed` does not fail on it (a missing value stays n/a).

Records of `kerasbench.measure(body=...)` name their function (spec.body, spec.body_sha256): a pair whose records
measured different bodies, or two sources of one, is refused (UsageError naming both), not compared.

A cell whose record is missing, not ok, or lacks the metric is n/a. Regressions come first. The ratio
is given only where both values have the same sign and the baseline is not 0; the difference always.
"""

# The docstring is `kerasbench compare --help`'s (commands/compare.py). The package, by job (docs/layout.md):
#
#   judging.py  one metric of one pair judged from two versions' records (the rules above), pure
#   cells.py    the comparison's cells: every pair, metric and version against the baseline, pure
#   groups.py   the records a comparison reads, loaded and grouped by version and pair
#   render.py   the cells as a table, markdown, JSON or CSV; the gate (--fail-on) and the counts
#
# An analysis that judges or orders imports judging or cells alone; its names are also the package's own.

from __future__ import annotations

from ..versions import version_key  # noqa: F401 (the namespace: compare sorts versions by it)
from .cells import (CHANGES, FIELDS, VERDICTS, Cell, Groups, changes, compare, hardware_note,  # noqa: F401
                    hardware_verdict, pair_order, pick_baseline, ratio)
from .groups import _one_body, group, load, rejudge_record  # noqa: F401
from .judging import (ALPHA, JUDGING, LENGTHS_APART, MAD_SD, MIN_SERIES, NOISE_K, Judging, Side,  # noqa: F401
                      _magnitude, _slope_ci, cell_side, figures_verdict, function_changes, judge, load_per_cpu,
                      loop_rate, residual_noise, timing_conditions, uncertain_value, uncertain_values)
from .render import (COLUMNS, FORMATS, GATES, build_text, counts, describe, difference_text, fail_on,  # noqa: F401
                     gate, render, render_csv, render_json, render_markdown, render_table, weak_note)
