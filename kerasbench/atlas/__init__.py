"""The atlas of `kerasbench report`: every (loop, strategy) pair against every TF version on one map.

A row per loop × strategy, a column per version as `compare` groups the records (compare.load / compare.group: a
release with tf_keras, another Python or another side is a column of its own, `2.16.2+tf_keras`), in
releases.version_key order. Each cell is the pair's one verdict (rule.pair_verdict: RSS and heap together, as the
run table's), what grew (`growth_kind`, rule.growth_kind) and the RSS slope (`growth_per_iter`, KiB/iteration); its
tooltip and a click name the RSS and heap verdicts it comes from and add the peak, the heap slope and the trace
counts. A cell is read against the previous column of its axis (the previous release with the same label; a
labelled column's first falls back to the plain releases) and marked (`mark`) where compare's rule on the RSS slope
says regressed or improved (compare.figures_verdict: its CI apart by more than the floor), else where its verdict or
what grew flipped between decided readings: a thick left border and ▲ (worse) or ▼ (better), and below the map the
commands that bisect (triage), attribute and ablate that change, with only the options those commands have. A flip
with a side undecided (◆) is not a change: not counted, shown on demand (a checkbox).
Two selects filter the rows by loop and strategy. Everything is inline (no network); every string from a record
goes through the page kit's esc (kerasbench.page), a change's picture is the drawing kit's (kerasbench.draw.spark).

A package by job: model (columns, changes, marks), changes (each change's questions and what their answers
confirm), data (atlas.json: format and checks), inputs (records or atlas.json, loaded into compare's groups), page
(the HTML, its CSS and JavaScript as files in assets/) and write (the one writer). The names below are its interface.
"""

from ..page import esc
from .model import (change, counted_changes, floors_apart, main_axis, mark, other_pythons, previous, previous_all,
                    verdict, verdicts_text)
from .changes import (ACROSS, CONFIRMED, CONTESTED, NEVER, REVERSED, SETTLE_WHAT, SETTLED, UNCONFIRMED, commands,
                      crossed_builds, first_answers, listed_commands, mark_kind, mark_note, no_command, questions,
                      settle_command, wider)
from .data import DATA, PAGE, SPARK_POINTS, _slim, data, data_text, groups_of
from .inputs import group_columns, holds_data, load, merge
from .html import page, section, spark
from .trust import trust_lines
from .write import write

__all__ = ["ACROSS", "CONFIRMED", "CONTESTED", "DATA", "NEVER", "PAGE", "REVERSED", "SETTLED", "SETTLE_WHAT",
           "SPARK_POINTS", "UNCONFIRMED", "_slim", "change", "commands", "counted_changes", "crossed_builds", "data",
           "data_text", "esc", "first_answers", "floors_apart", "group_columns", "groups_of", "holds_data",
           "listed_commands", "load", "main_axis", "mark", "mark_kind", "mark_note", "merge", "no_command",
           "other_pythons", "page", "previous", "previous_all", "questions", "section", "settle_command", "spark",
           "trust_lines", "verdict", "verdicts_text", "wider", "write"]
