"""kerasbench.atlas: every pair against every TF version, the changes from one version to the next marked."""

import json
import os
import re
import shutil

import pytest

from kerasbench import atlas, compare, report
from kerasbench.cli import main

from answered import kept, question


def section(groups_, answered=None, *args, **kwargs):
    """atlas.section with answers given as version 1 kept them (converted: tests/answered.kept)."""
    return atlas.section(groups_, kept(answered), *args, **kwargs)


def questions(groups_, *args, answered=None, **kwargs):
    return atlas.questions(groups_, *args, answered=kept(answered), **kwargs)


def wider(command, answered):
    """atlas.wider of a command line: (the command, its answer) of the wider triage, or None."""
    found = atlas.wider(question(command), kept(answered))
    return None if found is None else (found[0].command, answered[found[0].command])


def commands(*args, **kwargs):
    """atlas.commands as the page lists them: (what, command)."""
    return [(q.what, q.command) for q in atlas.commands(*args, **kwargs)]

KIB, MIB = 1024, 1024**2
HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "..", "docs", "reference")


def record(loop, strategy, verdict="flat", kind="flat", slope=1.0 * KIB, status="ok", reason=None):
    summary = {"verdict": verdict, "growth_kind": kind, "growth_per_iter": slope, "peak_loop": 900 * MIB,
               "peak_over_baseline": 40 * MIB, "heap_growth_per_iter": 2.0 * KIB, "heap_verdict": "flat",
               "train_path_traces": 3.0, "predict_path_traces": 0.0, "all_traces": 7.0, "repeats": 2,
               "floor": 32 * KIB}
    return {"loop": loop, "strategy": strategy, "status": status, "reason": reason,
            "summary": summary if status == "ok" else {}}


def groups(*versions):
    """{version: {(loop, strategy): (record, path)}} from {version: [records]}."""
    return {v: {(r["loop"], r["strategy"]): (r, f"{v}.json") for r in rs} for v, rs in versions}


@pytest.fixture
def three():
    """Three releases: sweep × clear_session_del_gc turns flat → grows at 2.14; sweep × reuse_model stays flat;
    kfold × clear_session is missing on 2.14; a strategy name carries markup."""
    evil = "<script>alert(1)</script>"
    return groups(
        ("2.13.1", [record("sweep", "clear_session_del_gc"), record("sweep", "reuse_model"),
                    record("kfold", "clear_session"), record("sweep", evil)]),
        ("2.14.1", [record("sweep", "clear_session_del_gc", "grows", "leak", 3600 * KIB),
                    record("sweep", "reuse_model"), record("sweep", evil)]),
        ("2.15.1", [record("sweep", "clear_session_del_gc", "grows", "leak", 3650 * KIB),
                    record("sweep", "reuse_model"), record("kfold", "clear_session"), record("sweep", evil)]),
    )


def row(html, loop, strategy):
    m = re.search(rf'<tr data-loop="{re.escape(loop)}" data-strategy="{re.escape(strategy)}">(.*?)</tr>', html, re.S)
    assert m, (loop, strategy)
    return re.findall(r"<td[^>]*>.*?</td>", m.group(1), re.S)


def test_the_changed_cell_is_marked_and_its_commands_name_the_versions(three):
    html = section(three)
    old, new, same = row(html, "sweep", "clear_session_del_gc")
    assert "changed" not in old and "changed" not in same  # 2.13.1 has nothing before it; 2.15.1 is as 2.14.1
    assert 'class="v-grows changed worse"' in new and "▲" in new and "grows" in new and "leak" in new
    assert "+3,600.0 KiB/it" in new
    assert "changed from TF 2.13.1: flat/flat → grows/leak" in new
    assert "kerasbench triage --good 2.13.1 --bad 2.14.1 --loop sweep --strategy clear_session_del_gc" in html
    assert "kerasbench attribute --good 2.13.1 --bad 2.14.1 --loop sweep --strategy clear_session_del_gc" in html
    assert "kerasbench ablate --loop sweep --tf 2.14.1" in html
    assert "--good 2.14.1 --bad 2.15.1" not in html
    assert "(1 in all)" in html  # one change, the legend explains the marks
    assert "worse than the previous version" in html


def test_a_mark_its_measuring_again_finds_alike_is_shown_not_confirmed(three):
    """A triage or attribution that ran to its end and found the change's two ends alike does not confirm the mark:
    the cell's mark is pale and dashed with why, the change says so, the count line counts it; another answer (a
    release found) or a failed command leaves the mark as it is."""
    from kerasbench.triage import ENDS_ALIKE

    triage = "kerasbench triage --good 2.13.1 --bad 2.14.1 --loop sweep --strategy clear_session_del_gc"
    attribute = triage.replace("triage", "attribute", 1)
    alike = {"what": "which release changed it", "rc": 0, "seconds": 40.0,
             "answer": f"No answer for sweep × clear_session_del_gc (growth_per_iter): {ENDS_ALIKE} (2.13.1 is bad)."}
    html = section(three, {triage: alike})
    new = row(html, "sweep", "clear_session_del_gc")[1]
    said = atlas.esc(atlas.UNCONFIRMED)
    assert 'data-unconfirmed="1"' in new and f"<li>{said}</li>" in new
    assert f'<span class="unconfirmed">{said}</span>' in html
    assert "1 not confirmed, of the 1 changes a triage or attribution measured again: the two ends not found " \
        "different" in html
    found = {"what": "which release changed it", "rc": 0, "seconds": 90.0, "answer": "TF 2.14.0 is the first release"}
    failed = dict(alike, rc=1)
    # the ends differed and the bisection stopped at a middle release too uncertain to place (docs/atlas's
    # kfold × rebuild_no_clear 2.12.1 → 2.13.1, read as alike for the words of its why until stop 56)
    neither = dict(found, answer="No answer for sweep × clear_session_del_gc (growth_per_iter): 2.14.0 behaves like "
                                 "neither end (neither like TF 2.13.1 nor like TF 2.14.1 for certain: the ends do not "
                                 "differ by more than their own uncertainty); the change is between 2.13.1 and 2.14.1, "
                                 "in more than one step? triage each side: --good 2.13.1 --bad 2.14.0, and --good "
                                 "2.14.0 --bad 2.14.1.")
    for answered in ({triage: found}, {triage: neither}):  # measured again, the ends found different: solid
        html = section(three, answered)
        assert 'data-unconfirmed="1"' not in html and "not confirmed:" not in html, answered
        assert f'<span class="settled">{atlas.esc(atlas.CONFIRMED)}</span>' in html
        assert "Marks by what measuring them again said: 1 confirmed. Solid: 1" in html
    for answered in ({attribute: failed}, {}):  # nothing measured its ends again: pale, and says so
        html = section(three, answered)
        assert 'data-unconfirmed="1"' in html and "not confirmed:" not in html, answered
        assert f'<span class="unconfirmed">{atlas.esc(atlas.NEVER)}</span>' in html
        assert "1 never measured again. Solid: 0" in html


def test_a_mark_whose_answers_disagree_is_shown_contested(three):
    """Measured again twice, the triage finds the two ends alike and the attribution finds a package that carries
    the change: the mark is pale with the contested note (not the not-confirmed one), the count says so; an
    attribution that did not run to its end beside the alike triage: not confirmed, as before."""
    from kerasbench.triage import ENDS_ALIKE

    triage = "kerasbench triage --good 2.13.1 --bad 2.14.1 --loop sweep --strategy clear_session_del_gc"
    attribute = triage.replace("triage", "attribute", 1)
    alike = {"what": "which release changed it", "rc": 0, "seconds": 40.0,
             "answer": f"No answer for sweep × clear_session_del_gc (growth_per_iter): {ENDS_ALIKE} (2.13.1 is bad)."}
    carried = {"what": "which package carries it", "rc": 0, "seconds": 90.0,
               "answer": "Answer: carried by keras 2.14.0: the good environment with it alone behaves like the bad end"}
    html = section(three, {triage: alike, attribute: carried})
    new = row(html, "sweep", "clear_session_del_gc")[1]
    contested, unconfirmed = atlas.esc(atlas.CONTESTED), atlas.esc(atlas.UNCONFIRMED)
    assert 'data-unconfirmed="1"' in new and f"<li>{contested}</li>" in new
    assert f'<span class="unconfirmed">{contested}</span>' in html and unconfirmed not in html
    assert ("0 not confirmed, of the 1 changes a triage or attribution measured again: the two ends not found "
            "different, and 1 contested: one answer found them alike, another different (a pale, dashed mark on the "
            "map)") in html
    # what would settle it: its triage measured longer, listed last, and --answer's first once each change has one
    settle = f"{triage} --profile full"
    assert html.count(f'<li>{atlas.SETTLE_WHAT}: <code class="cmd">{settle}</code></li>') == 1
    asked = questions(three, answered={triage: alike, attribute: carried})
    assert asked[0].command == settle and asked[0].changes == ("sweep × clear_session_del_gc, TF 2.13.1 → 2.14.1",)
    failed = dict(carried, rc=1)  # an attribution that did not run to its end says nothing of the two ends
    html = section(three, {triage: alike, attribute: failed})
    assert f'<span class="unconfirmed">{unconfirmed}</span>' in html and contested not in html
    assert "1 not confirmed, of the 1 changes" in html and "contested:" not in html
    assert settle not in html  # not confirmed: one answer, nothing to settle
    assert settle not in [q.command for q in questions(three, answered={triage: alike, attribute: failed})]


def test_a_contested_mark_is_settled_by_its_triage_measured_longer(three):
    """The settling triage (--profile full) decides alone once it ran: it found the ends different the mark's way
    (it bisected, or stopped at a release like neither end), the mark holds, not pale, its note says settled and the
    count says how many; the other way, or alike, the mark is not confirmed; it failed, or its answer does not say
    which way, the change stays contested (and shows why)."""
    from kerasbench.triage import ENDS_ALIKE

    triage = "kerasbench triage --good 2.13.1 --bad 2.14.1 --loop sweep --strategy clear_session_del_gc"
    attribute = triage.replace("triage", "attribute", 1)
    settle = f"{triage} --profile full"
    said = "No answer for sweep × clear_session_del_gc (growth_per_iter): "
    alike = {"what": "which release changed it", "rc": 0, "seconds": 40.0,
             "answer": f"{said}{ENDS_ALIKE} (2.13.1 is bad)."}
    carried = {"what": "which package carries it", "rc": 0, "seconds": 90.0,
               "answer": "Answer: carried by keras 2.14.0: the good environment with it alone behaves like the bad end"}
    held = {"what": atlas.SETTLE_WHAT, "rc": 0, "seconds": 600.0,
            "answer": "Answer: TF 2.14.0 is the first release where sweep × clear_session_del_gc (growth_per_iter) "
                      "behaves like 2.14.1; the last like 2.13.1 is 2.13.1. The ends: TF 2.14.1 against TF 2.13.1, "
                      "regressed: CI [+380, +420] vs [-10, +12] KiB/iter: above, by more than the floor."}
    html = section(three, {triage: alike, attribute: carried, settle: held})
    new = row(html, "sweep", "clear_session_del_gc")[1]
    assert 'data-unconfirmed="1"' not in new and "contested:" not in html and "not confirmed:" not in html
    assert f'<span class="settled">{atlas.esc(atlas.SETTLED)}</span>' in html
    assert ("; 1 contested before and measured longer by their triage (the full profile): 1 hold, 0 not confirmed "
            "(counted above)") in html
    assert f"{atlas.SETTLE_WHAT}: <span class=\"answer\">Answer: TF 2.14.0 is the first release" in html
    assert "of their 4 commands run, 3 with an answer" in html  # the settle counted with the change's commands
    # the other way (the mark is worse, the longer triage found the bad end improved): not confirmed, and said so
    other = dict(held, answer=held["answer"].replace("regressed", "improved"))
    html = section(three, {triage: alike, attribute: carried, settle: other})
    assert f'<span class="unconfirmed">{atlas.esc(atlas.REVERSED)}</span>' in html and "settled:" not in html
    assert "(1 of them: the other way, measured longer)" in html
    assert "longer by their triage (the full profile): 0 hold, 1 not confirmed" in html
    # an answer that does not say which way its ends went (made before stop 56): still contested
    unsaid = dict(held, answer=held["answer"].split(" The ends:")[0])
    html = section(three, {triage: alike, attribute: carried, settle: unsaid})
    assert f'<span class="unconfirmed">{atlas.esc(atlas.CONTESTED)}</span>' in html and "settled:" not in html
    gone = dict(alike, seconds=620.0)  # measured longer, the ends alike: not confirmed
    html = section(three, {triage: alike, attribute: carried, settle: gone})
    assert f'<span class="unconfirmed">{atlas.esc(atlas.UNCONFIRMED)}</span>' in html and "settled:" not in html
    failed = dict(held, rc=1, answer="", tail=["kerasbench: error: the disk is full"])
    html = section(three, {triage: alike, attribute: carried, settle: failed})
    assert f'<span class="unconfirmed">{atlas.esc(atlas.CONTESTED)}</span>' in html
    assert "no answer (exit 1, 10:00 to answer): kerasbench: error: the disk is full" in html


def test_a_backends_attribution_that_finds_every_backend_alike_does_not_confirm_a_flip_only():
    """tensorflow grows, jax flat on the map; `attribute --backends tensorflow,jax --tf 2.21.0` measured again finds
    both growing: the flip is not confirmed. A mark of the slope alone (both grow on the map) is not about verdicts:
    the same answer leaves it as it is."""
    from kerasbench.attribute import BACKENDS_ALIKE

    def column(v, verdict, kind, slope):
        rec = record("sweep", "clear_session_del_gc", verdict, kind, slope)
        rec["summary"].update(growth_ci_low=slope * 0.98, growth_ci_high=slope * 1.02)
        return (v, [rec])

    cmd = "kerasbench attribute --backends tensorflow,jax --tf 2.21.0 --loop sweep --strategy clear_session_del_gc"
    # as answers.json keeps it: the command's own line, "Answer: " first (the check once missed every real one)
    alike = {cmd: {"what": "which backend carries it", "rc": 0, "seconds": 60.0,
                   "answer": f"Answer: {BACKENDS_ALIKE[0]}: it grows on every backend measured (tensorflow and jax), "
                             "so …"}}
    flip = groups(column("2.21.0", "grows", "leak", 3600 * KIB), column("2.21.0+jax", "flat", "flat", 4 * KIB))
    html = section(flip, alike)
    assert cmd in html and 'data-unconfirmed="1"' in row(html, "sweep", "clear_session_del_gc")[1]
    assert "1 not confirmed" in html
    slope = groups(column("2.21.0", "grows", "leak", 3600 * KIB), column("2.21.0+jax", "grows", "leak", 900 * KIB))
    html = section(slope, alike)
    assert "changed better" in row(html, "sweep", "clear_session_del_gc")[1]  # marked, by the slope
    assert "not confirmed:" not in html  # the backends' answer says nothing of a slope's size: not measured again
    assert f'<span class="unconfirmed">{atlas.esc(atlas.NEVER)}</span>' in html


def test_a_nightly_triage_over_a_wider_range_answers_the_part_of_it_where_its_nightly_lies():
    """A column measured between a triage's two nightlies (the workflow adds one a night) splits its change: the
    triage's answer is shown beside the part holding the nightly it found, with its range; not beside the other part,
    nor from another pair's triage, a failed one, or one without a nightly found."""
    def triage(good, bad, loop="sweep"):
        return f"kerasbench triage --good nightly:{good} --bad nightly:{bad} --loop {loop} --strategy clear_session"

    found = "Answer: TF 2.22.0.dev20260731 is the first nightly where sweep × clear_session behaves like the bad end."
    answered = {triage("2026-07-15", "2026-08-08"): {"rc": 0, "seconds": 200.0, "answer": found},
                triage("2026-06-15", "2026-09-05"): {"rc": 0, "seconds": 300.0, "answer": found},  # wider still
                triage("2026-07-15", "2026-08-08", "kfold"): {"rc": 0, "seconds": 200.0, "answer": found}}
    near = wider(triage("2026-07-15", "2026-07-31"), answered)
    assert near == (triage("2026-07-15", "2026-08-08"), answered[triage("2026-07-15", "2026-08-08")])  # narrowest
    assert wider(triage("2026-07-31", "2026-08-08"), answered) is None  # its nightly is this part's good end
    assert wider(triage("2026-07-15", "2026-08-08"), answered)[0] == triage("2026-06-15", "2026-09-05")
    assert wider(triage("2026-07-15", "2026-07-31", "notebook"), answered) is None  # no triage of that pair
    for entry in ({"rc": 1, "answer": found}, {"rc": 0, "answer": "No answer for sweep × clear_session: …"}):
        assert wider(triage("2026-07-15", "2026-07-31"), {triage("2026-07-15", "2026-08-08"): entry}) is None
    assert wider("kerasbench ablate --loop sweep --tf 2.21.0", answered) is None


def test_a_change_no_command_can_answer_says_why_and_how_to_measure_it_again():
    """tf1_graph builds no model (no ablation), and one release on another Python has no release to find: the change
    lists no command, so it says why and gives the two `kerasbench run`s that would measure its ends again."""
    g = groups(("2.16.2", [record("tf1_graph", "tf1_default_graph")]),
               ("2.16.2+py3.12", [record("tf1_graph", "tf1_default_graph", "grows", "leak", 3600 * KIB)]))
    assert atlas.questions(g) == []
    html = section(g, {"kerasbench ablate --loop sweep --tf 2.13.1": {"rc": 0, "answer": "Flat variants: none."}})
    assert ("No command answers this change here: one release (2.16.2) on another Python: no release to find or "
            "compare, and ablate takes apart the cleanup of loops that build models, which tf1_graph does not.") in html
    assert ("kerasbench run --loop tf1_graph --strategy tf1_default_graph --tf 2.16.2 --python 3.12 --profile full"
            in html)
    assert "(0 of the 1 changes with an answer beside one of their commands, 1 with none, 1 of them with no command " \
           "to run: each says why)" in html
    why, runs = atlas.no_command("batch_stream", "keep_outputs", "2.15.1", "2.16.2+tf_keras")
    assert "not tf_keras beside it" in why and runs == [
        "kerasbench run --loop batch_stream --strategy keep_outputs --tf 2.15.1 --profile full",
        "kerasbench run --loop batch_stream --strategy keep_outputs --tf 2.16.2 --keras tf_keras --profile full"]
    assert "not back to the release cut" in atlas.no_command("tf1_graph", "tf1_sess_close", "2.21.0-dev20260115",
                                                            "2.21.0")[0]
    assert atlas.no_command("sweep", "reuse_model", "2.16.2", "2.16.2+py3.12") == ("", [])  # ablate takes sweep


def test_a_cell_leads_with_the_pairs_one_verdict_and_a_change_of_it_is_marked():
    # RSS flat on both versions; the heap grows on the second: the pair grows (a leak RSS hides in held pages)
    before = record("sweep", "reuse_model")
    after = record("sweep", "reuse_model", "flat", "leak")
    after["summary"]["heap_verdict"] = "grows"
    html = section(groups(("2.20.0", [before]), ("2.21.0", [after])))
    old, new = row(html, "sweep", "reuse_model")
    assert 'class="v-flat"' in old and '<span class="verdict">flat</span>' in old
    assert 'class="v-grows changed worse"' in new and '<span class="verdict">grows</span>' in new
    assert "TF 2.21.0: grows (RSS flat, heap grows), RSS slope" in new  # the verdicts it comes from, named
    assert "changed from TF 2.20.0: flat/flat → grows/leak" in new
    assert "2.20.0 → 2.21.0: flat/flat" in html and "→ grows/leak" in html  # the list of changes
    assert atlas.change(before, after) == "worse"


def test_unchanged_and_missing_pairs(three):
    html = section(three)
    assert all("changed" not in td for td in row(html, "sweep", "reuse_model"))
    first, missing, back = row(html, "kfold", "clear_session")
    assert ">n/a</td>" in missing and 'title="not measured on TF 2.14.1"' in missing
    assert "changed" not in back  # vs 2.14.1, where it was not measured: no change to mark


def test_details_on_hover_and_click(three):
    cell = row(section(three), "sweep", "clear_session_del_gc")[1]
    for text in ("peak: 900.0 MiB", "heap slope: +2.0 KiB/iteration", "train_path_traces 3", "all_traces 7"):
        assert text in cell  # in the list that hovering shows and a click opens
    assert cell.count("heap slope") == 1  # once: the hover is the same list (no title attribute repeating it)


def test_a_cell_keeps_and_shows_the_counts_and_intervals_it_was_judged_on(three):
    # what a reader needs to see how a label was reached (and to score it against a long run): each series' slope
    # and interval, the iterations each repeat measured, the level and where the repeats stopped
    rec = three["2.14.1"][("sweep", "clear_session_del_gc")][0]
    rec["summary"].update(growth_ci_low=3500 * KIB, growth_ci_high=3700 * KIB, heap_growth_ci_low=1.5 * KIB,
                          heap_growth_ci_high=2.5 * KIB, measured=[150, 148], stopped=["budget", "budget"],
                          alpha=0.05)
    kept = next(c for col in atlas.data(three)["columns"] if col["version"] == "2.14.1" for c in col["cells"]
                if c["strategy"] == "clear_session_del_gc")["summary"]
    assert kept["measured"] == [150, 148] and kept["heap_growth_ci_high"] == 2.5 * KIB and kept["alpha"] == 0.05
    cell = row(section(three), "sweep", "clear_session_del_gc")[1]
    assert "heap slope: +2.0 KiB/iteration (95% CI +1.5 … +2.5)" in cell and "150,148 iterations measured" in cell


def test_filters_and_escaping(three):
    html = section(three)
    assert '<select id="atlas-loop">' in html and '<select id="atlas-strategy">' in html
    assert '<option value="kfold">kfold</option>' in html and 'id="atlas-changed"' in html
    assert "dataset.loop" in html and "dataset.strategy" in html
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "http://" not in html and "https://" not in html  # offline: nothing loaded


def test_failed_and_skipped_cells():
    html = section(groups(
        ("2.13.1", [record("sweep", "reuse_model"), record("kfold", "reuse_model")]),
        ("2.14.1", [record("sweep", "reuse_model", status="failed", reason="<killed>"),
                    record("kfold", "reuse_model", status="skipped", reason="n/a here")])))
    assert ">failed</td>" in html and "&lt;killed&gt;" in html and ">n/a</td>" in html
    assert "changed" not in "".join(row(html, "sweep", "reuse_model"))


def test_one_version_has_no_atlas():
    assert section(groups(("2.21.0", [record("sweep", "reuse_model")]))) == ""


def test_axes_are_read_against_their_own_previous_column():
    versions = ["2.15.1", "2.16.2", "2.16.2+tf_keras", "2.17.1", "2.17.1+tf_keras"]
    assert atlas.previous("2.16.2", versions) == "2.15.1"
    assert atlas.previous("2.16.2+tf_keras", versions) == "2.15.1"  # first of its axis: the plain release before
    assert atlas.previous("2.17.1+tf_keras", versions) == "2.16.2+tf_keras"
    assert atlas.previous("2.17.1", versions) == "2.16.2"
    assert atlas.previous("2.15.1", versions) is None
    keras = dict(commands("sweep", "reuse_model", "2.16.2+tf_keras", "2.17.1+tf_keras"))
    assert list(keras.values()) == ["kerasbench ablate --loop sweep --tf 2.17.1 --keras tf_keras"]  # triage: no --keras
    py = [c for _, c in commands("sweep", "reuse_model", "2.16.2+py3.12", "2.17.1+py3.12")]
    assert py[0] == "kerasbench triage --good 2.16.2 --bad 2.17.1 --loop sweep --strategy reuse_model --python 3.12"
    assert py[-1] == "kerasbench ablate --loop sweep --tf 2.17.1 --python 3.12"
    nightly = [c for _, c in commands("inference", "reuse_model", "2.21.0", "2.22.0-dev20260514")]
    assert nightly == ["kerasbench triage --good 2.21.0 --bad nightly:2026-05-14 --loop inference "
                       "--strategy reuse_model", "kerasbench ablate --loop inference --tf nightly:2026-05-14"]
    # a nightly, then the release cut after it (2.21.0 at its branch cut): `triage --good nightly:… --bad 2.21.0`
    # exits 2 ("Unknown TF nightly"), so only the ablation is offered, and the page says why
    # two nightlies: attribute too (it takes a nightly at each end), not across a release and a nightly
    days = [c for _, c in commands("inference", "reuse_model", "2.22.0-dev20260514", "2.22.0-dev20260615")]
    assert days == ["kerasbench triage --good nightly:2026-05-14 --bad nightly:2026-06-15 --loop inference "
                    "--strategy reuse_model", "kerasbench attribute --good nightly:2026-05-14 --bad nightly:2026-06-15 "
                    "--loop inference --strategy reuse_model", "kerasbench ablate --loop inference --tf "
                    "nightly:2026-06-15"]
    # …but not between a CPU nightly and a full one (the atlas' nightly of 2026-10-26: attribute refuses them)
    cells = [dict(record("inference", "reuse_model"), environment={"tf_distribution": d})
             for d in ("tf-nightly-cpu", "tf-nightly-cpu", "tf-nightly")]
    listed = [q.verb for q in atlas.listed_commands("inference", "reuse_model", "2.22.0-dev20260514",
                                                               "2.22.0-dev20260615", None, {}, *cells[:2])]
    assert listed == ["triage", "attribute", "ablate"]
    listed = [q.verb for q in atlas.listed_commands("inference", "reuse_model", "2.22.0-dev20260905",
                                                               "2.23.0-dev20261026", None, {}, *cells[1:])]
    assert listed == ["triage", "ablate"] and atlas.crossed_builds(*cells[1:]) and not atlas.crossed_builds({}, {})
    cut = [c for _, c in commands("sweep", "reuse_model", "2.21.0-dev20260115", "2.21.0")]
    assert cut == ["kerasbench ablate --loop sweep --tf 2.21.0"]
    g = groups(("2.21.0-dev20260115", [record("sweep", "reuse_model")]),
               ("2.21.0", [record("sweep", "reuse_model", "grows", "leak", 3600 * KIB)]))
    assert "no triage here" in section(g) and not any("triage" in q.command for q in atlas.questions(g))


def test_a_column_on_an_older_python_and_a_report_s_row_get_commands_that_run():
    """TF 2.8–2.11 have no wheel for the atlas' own Python: their columns ran on 3.10, unlabelled, and their commands
    name it (both ends of a triage on it); a public report's row names its repro file, another repro's `FILE` is
    shown but not asked of --answer (it cannot run)."""
    def on(python, *records):
        for r in records:
            r["environment"] = {"python": f"{python}.7", "tensorflow": "x"}
        return list(records)

    report = "report:tf57982_tf_function"
    g = groups(("2.11.1", on("3.10", record("sweep", "clear_session"), record(report, "reuse_model"),
                             record("repro", "reuse_model"))),
               ("2.12.1", on("3.11", record("sweep", "clear_session", "grows", "leak", 3600 * KIB),
                             record(report, "reuse_model", "grows", "leak", 200 * KIB),
                             record("repro", "reuse_model", "grows", "leak", 200 * KIB))),
               ("2.13.1", on("3.11", record("sweep", "clear_session"), record(report, "reuse_model"),
                             record("repro", "reuse_model"))))
    assert atlas.other_pythons(g) == {"2.11.1": "3.10"}
    asked = [q.command for q in atlas.questions(g)]
    assert "kerasbench triage --good 2.11.1 --bad 2.12.1 --loop sweep --strategy clear_session --python 3.10" \
        in asked
    assert "kerasbench ablate --loop sweep --tf 2.12.1" in asked  # its bad end on the atlas' own Python
    both = {"2.10.1": "3.10", "2.11.1": "3.10"}
    assert commands("sweep", "clear_session", "2.10.1", "2.11.1", both)[-1][1] == \
        "kerasbench ablate --loop sweep --tf 2.11.1 --python 3.10"
    assert ("kerasbench triage --good 2.11.1 --bad 2.12.1 --repro kerasbench/examples/reports/tf57982_tf_function.py "
            "--strategy reuse_model --python 3.10") in asked
    assert not any("FILE" in c for c in asked)
    html = section(g)
    assert "--repro FILE" in html and "--python 3.10" in html


def test_commands_use_only_options_the_commands_have(capsys):
    for command in ("triage", "attribute", "ablate"):
        try:
            main([command, "-h"])
        except SystemExit:  # argparse's exit after the help
            pass
        known = set(re.findall(r"--[a-z][a-z-]*", capsys.readouterr().out))
        for good, bad in (("2.13.1", "2.14.1"), ("2.16.2+py3.12", "2.17.1+py3.12"),
                          ("2.16.2+tf_keras", "2.17.1+tf_keras"), ("2.21.0", "2.21.0+jax")):
            for _, cmd in commands("sweep", "clear_session_del_gc", good, bad):
                if cmd.split()[1] == command:
                    assert set(re.findall(r"--[a-z][a-z-]*", cmd)) <= known, cmd


def test_real_records_show_the_tf_214_regression(tmp_path, capsys):
    # the project's atlas (protocol 8, calibrated floors): sweep × clear_session_del_gc a small heap leak on 2.13.1
    # (RSS +22 flat, heap +7 grows), ×112 the RSS slope on 2.14.1: marked worse by compare's rule, not on 2.15.1
    docs = section(atlas.load([os.path.join(HERE, "..", "docs", "atlas", "atlas.json")]))
    cells = dict(re.findall(r'<td data-ver="([^"]*)" class="([^"]*)"', "".join(row(docs, "sweep",
                                                                                  "clear_session_del_gc"))))
    assert (cells["2.13.1"], cells["2.14.1"], cells["2.15.1"]) == ("v-grows", "v-grows changed worse", "v-grows")
    assert "kerasbench triage --good 2.13.1 --bad 2.14.1 --loop sweep --strategy clear_session_del_gc" in docs
    # the long references (calibrated floors): 2.12.1's heap already grows (6 KiB/iteration over a 1 KiB floor), so
    # the pair grows on both sides, a leak on both: its label does not flip, but compare's rule (the heat-table's)
    # calls the RSS slope's 130-fold growth regressed: marked worse, with compare's why and its size
    paths = [os.path.join(REFERENCE, f"tf-{v}.json") for v in ("2.12.1", "2.21.0")]
    grouped = compare.group(compare.load(paths))
    html = section(grouped)
    old, new = row(html, "sweep", "clear_session_del_gc")
    assert 'class="v-grows"' in old and "TF 2.12.1: grows (RSS flat, heap grows)" in old
    assert 'class="v-grows changed worse"' in new and "TF 2.21.0: grows (RSS grows, heap grows)" in new
    assert "compare: RSS slope regressed, ×130" in new and "▲" in new
    heat = [c for c in compare.compare(grouped, metrics=["growth_per_iter"])
            if (c["loop"], c["strategy"]) == ("sweep", "clear_session_del_gc")]
    # one rule: the report's heat-table reads the same figures so (other machines: said beside, as the cell's tip does)
    assert [c["figures_verdict"] for c in heat] == ["regressed"] and "different hardware" in new
    assert all("changed" not in td for td in row(html, "sweep", "process_isolation"))  # flat on both
    out = tmp_path / "atlas.html"
    assert main(["report", *paths, "--atlas", "--output", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and 'id="atlas"' in page and 'class="heat"' not in page
    assert "wrote the atlas" in capsys.readouterr().out


def test_the_report_shows_the_atlas_first(tmp_path):
    paths = [os.path.join(REFERENCE, f"tf-{v}.json") for v in ("2.12.1", "2.21.0")]
    page = report.build(paths)
    assert page.index('id="atlas"') < page.index('class="heat"')
    one = report.build(paths[1:])
    assert 'id="atlas"' not in one


def test_report_atlas_writes_what_the_atlas_command_writes(tmp_path, monkeypatch, capsys):
    from test_compare import TF212, TF221

    monkeypatch.chdir(tmp_path)
    assert main(["report", TF212, TF221, "--atlas"]) == 0
    made = tmp_path / ".asv" / "html" / "atlas"
    assert sorted(os.listdir(made)) == [atlas.DATA, atlas.PAGE]
    assert f"to {os.path.join('.asv', 'html', 'atlas', atlas.PAGE)}" in capsys.readouterr().out
    assert main(["atlas", TF212, TF221, "--output", str(tmp_path / "by-atlas")]) == 0

    def unstamped(path):
        return re.sub(r"Generated [^;]+ by", "Generated by", path.read_text(encoding="utf-8"))

    assert unstamped(made / atlas.PAGE) == unstamped(tmp_path / "by-atlas" / atlas.PAGE)
    assert (made / atlas.DATA).read_bytes() == (tmp_path / "by-atlas" / atlas.DATA).read_bytes()


def test_atlas_refuses_the_options_of_the_full_report(tmp_path, capsys):
    paths = [os.path.join(REFERENCE, f"tf-{v}.json") for v in ("2.12.1", "2.21.0")]
    assert main(["report", *paths, "--atlas", "--baseline", "2.21.0", "--output", str(tmp_path / "a.html")]) == 2
    assert "--atlas writes the atlas page alone" in capsys.readouterr().err
    assert not (tmp_path / "a.html").exists()


def test_worse_and_better_only_between_decided_readings():
    from kerasbench import atlas as atlas_module

    def rec(verdict, kind):
        return {"status": "ok", "summary": {"verdict": verdict, "growth_kind": kind}}

    assert atlas_module.change(rec("flat", "flat"), rec("grows", "leak")) == "worse"
    assert atlas_module.change(rec("grows", "leak"), rec("flat", "flat")) == "better"
    assert atlas_module.change(rec("flat", "retention"), rec("flat", "leak")) == "worse"
    # 2.12.1 → 2.21.0, notebook × reuse_model: grows, then undecided (its repeats disagree): not "better"
    assert atlas_module.change(rec("grows", "leak"), rec("inconclusive", "leak")) == "other"
    assert atlas_module.change(rec("inconclusive", "inconclusive"), rec("grows", "leak")) == "other"
    assert atlas_module.change(rec("grows", "leak"), rec("grows", "leak")) is None


def with_ci(slope_kib, low_kib, high_kib, verdict="grows", kind="leak"):
    rec = record("sweep", "rebuild_no_clear", verdict, kind, slope_kib * KIB)
    rec["summary"].update(growth_ci_low=low_kib * KIB, growth_ci_high=high_kib * KIB, floor=64 * KIB)
    return rec


def test_a_change_compare_calls_is_marked_without_a_flip_of_the_label():
    # the published atlas' sweep × rebuild_no_clear: grows (a leak) on all three, +7,370 → +1,646 → +6,196
    # KiB/iteration, CIs apart: compare's rule says improved, then regressed (6.46× the slope it grew from)
    grouped = groups(("2.12.1", [with_ci(7370, 7293, 7411)]), ("2.13.1", [with_ci(1646, 973, 2519)]),
                     ("2.14.1", [with_ci(6196, 6167, 6252)]))
    html = section(grouped)
    first, down, up = row(html, "sweep", "rebuild_no_clear")
    assert "changed" not in first
    assert 'class="v-grows changed better"' in down and "▼" in down and "compare: RSS slope improved, ×0.223" in down
    assert 'class="v-grows changed worse"' in up and "▲" in up and "compare: RSS slope regressed, ×3.76" in up
    assert "grows/leak → grows/leak (+1,646.0 → +6,196.0 KiB/it)" in up  # the label did not flip; the slope did
    assert "2 changes from one version to the next (1 worse, 1 better)" in html and "(2 in all)" in html
    assert atlas.change(grouped["2.13.1"][("sweep", "rebuild_no_clear")][0],
                        grouped["2.14.1"][("sweep", "rebuild_no_clear")][0]) is None  # the label's flip alone: none
    # compare says nothing (CIs overlap): the flip of the verdict still marks it, as before
    assert atlas.mark(with_ci(10, -30, 50, "flat", "flat"), with_ci(90, -20, 200))[0] == "worse"


def test_a_flip_with_a_side_undecided_is_shown_on_demand_and_not_counted():
    grouped = groups(("2.20.0", [record("notebook", "reuse_model", "grows", "leak", 300 * KIB)]),
                     ("2.21.0", [record("notebook", "reuse_model", "inconclusive", "leak", 280 * KIB)]))
    html = section(grouped)
    old, new = row(html, "notebook", "reuse_model")
    assert 'class="v-inconclusive undecided other"' in new and "changed " not in new  # ◆ hidden by the page's CSS
    assert "a side is undecided: not counted as a change; compare on the RSS slope: inconclusive" in new
    assert "a side undecided from TF 2.20.0: grows/leak → inconclusive/leak" in new
    assert "0 changes from one version to the next; 1 flip with a side undecided (◆, not counted)" in html
    assert "(0 in all)" in html and '<details class="undecided"><summary>1 flip of a verdict' in html
    assert re.search(r'<details class="undecided">.*id="atlas-change-0" class="other"', html, re.S)
    assert 'id="atlas-undecided"' in html and "show the flips with a side undecided (◆, 1)" in html
    assert ".atlas td.undecided>.glyph{display:none}" in html and ".atlas.show-undecided td.undecided>.glyph" in html


def test_the_change_picture_names_each_line_and_its_unit():
    before = {"status": "ok", "summary": {}, "rss_mib": [0.0, 0.1, 0.2], "rss_every": 1}
    after = {"status": "ok", "summary": {}, "rss_mib": [0.0, 3.0, 6.0], "rss_every": 1}
    svg = atlas.spark(before, after, "2.12.1", "2.17.1")
    legend = svg[svg.index('<g class="legend">'):]
    assert 'stroke="#999"' in legend and 'stroke="#c33"' in legend  # a line of each colour, then its name
    assert legend.index("#999") < legend.index(">TF 2.12.1<") < legend.index("#c33") < legend.index(">TF 2.17.1<")
    assert ">RSS, MiB over the first reading<" in legend
    height = int(re.search(r'height="(\d+)"', svg).group(1))
    assert height > 64 and max(float(y) for y in re.findall(r' y="([\d.]+)"', legend)) < height  # inside it


# ---------------------------------------------------------------- `kerasbench atlas`: the page and its data


def test_the_atlas_data_makes_the_same_page_and_holds_series_only_for_changes():
    paths = [os.path.join(REFERENCE, f"tf-{v}.json") for v in ("2.12.1", "2.21.0")]
    grouped = compare.group(compare.load(paths))
    payload = json.loads(atlas.data_text(atlas.data(grouped)))  # as written, then read
    assert section(atlas.groups_of(payload, "atlas.json")) == section(grouped)
    cells = {(c["version"], cell["loop"], cell["strategy"]): cell
             for c in payload["columns"] for cell in c["cells"]}
    changed = {(c["version"], cell["loop"], cell["strategy"]) for c in payload["columns"] for cell in c["cells"]
               if "rss_mib" in cell}
    assert {("2.21.0", "sweep", "clear_session"), ("2.12.1", "sweep", "clear_session")} <= changed  # ◆
    # grows, a leak, on both, but compare calls its slope's 130-fold growth regressed: a change, with its series
    assert ("2.21.0", "sweep", "clear_session_del_gc") in changed
    assert ("2.21.0", "sweep", "process_isolation") not in changed  # flat on both: no series
    assert all(len(cells[k]["rss_mib"]) <= atlas.SPARK_POINTS for k in changed)
    assert all("repeats" not in cell and "spec" not in cell for cell in cells.values())  # no records' repeats
    # what the page needs, not the records: under 1 KiB a cell where the records are tens of KiB
    size = len(atlas.data_text(atlas.data(grouped)))
    assert size / len(cells) < 1024, size / len(cells)
    assert sum(os.path.getsize(p) for p in paths) / size > 10


def test_a_column_keeps_each_floors_stamp_once_and_its_cells_read_their_own_back():
    """A calibration's stamp (~0.5 KiB) is the same in most of a column's cells: kept once in the column, named by
    index, and given back as each cell's summary.floors_from when read; a version-1 file (each cell its own) reads
    the same."""
    paths = [os.path.join(REFERENCE, "protocol8", f"tf-{v}.json") for v in ("2.12.1", "2.21.0")]  # stamped
    grouped = compare.group(compare.load(paths))
    payload = json.loads(atlas.data_text(atlas.data(grouped)))
    assert payload["version"] == 2
    for column in payload["columns"]:
        stamps = column["floors"]
        assert stamps and len(stamps) < len(column["cells"]) / 4  # the point: few stamps, many cells
        assert all(stamps.count(s) == 1 for s in stamps)
        assert all("floors_from" not in c["summary"] and 0 <= c["floors"] < len(stamps) for c in column["cells"])
    read = atlas.groups_of(payload, "atlas.json")
    for v, cells in grouped.items():
        for pair, (record, _) in cells.items():
            assert read[v][pair][0]["summary"]["floors_from"] == atlas._slim(record["summary"]["floors_from"]), pair
    old = json.loads(json.dumps(payload))  # version 1: the stamp inside each cell's summary
    old["version"] = 1
    for column in old["columns"]:
        for c in column["cells"]:
            c["summary"]["floors_from"] = column["floors"][c.pop("floors")]
        del column["floors"]
    assert section(atlas.groups_of(old, "old.json")) == section(read) == section(grouped)
    assert len(atlas.data_text(old)) > 1.2 * len(atlas.data_text(payload))


def test_a_change_is_drawn_from_both_sides_series():
    before = {"status": "ok", "summary": {}, "rss_mib": [0.0, 0.1, 0.1, 0.2], "rss_every": 1}
    after = {"status": "ok", "summary": {}, "rss_mib": [0.0, 3.0, 6.0], "rss_every": 2}  # iterations 0, 2, 4
    svg = atlas.spark(before, after, "2.12.1", "2.17.1", width=104, height=64)
    lines = re.findall(r'points="([^"]+)"', svg)
    assert len(lines) == 2 and "+6.0 MiB" in svg and ">4 it<" in svg
    after_pts = [tuple(map(float, p.split(","))) for p in lines[1].split()]
    assert after_pts[0] == (4.0, 60.0) and after_pts[-1] == (100.0, 4.0)  # its last reading: the top right corner
    assert [x for x, _ in after_pts] == [4.0, 52.0, 100.0]  # every second iteration, on the same x scale as the other
    assert atlas.spark(before, {"status": "ok", "summary": {}}, "2.12.1", "2.17.1") == ""  # a side without series


def test_pairs_no_version_measured_are_named_not_drawn():
    gpu = "needs a GPU: run it with --device gpu"
    html = section(groups(
        ("2.13.1", [record("sweep", "reuse_model"), record("sweep", "gpu_growth_on", status="skipped", reason=gpu)]),
        ("2.14.1", [record("sweep", "reuse_model"), record("sweep", "gpu_growth_on", status="skipped", reason=gpu)])))
    assert 'data-strategy="gpu_growth_on"' not in html
    assert "Not measured on any version, so not drawn (1 pair): gpu_growth_on (sweep): needs a GPU" in html


def test_the_atlas_command_writes_the_page_and_its_data_and_remakes_the_page_from_the_data(tmp_path, capsys):
    paths = [os.path.join(REFERENCE, f"tf-{v}.json") for v in ("2.12.1", "2.21.0")]
    folder = tmp_path / "docs" / "atlas"  # made, with its parents
    assert main(["atlas", *paths, "--output", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "wrote the atlas to" in out and "atlas.json" in out and "index.html" in out
    assert sorted(os.listdir(folder)) == ["atlas.json", "index.html"]  # written atomically: no temp file left
    data_bytes = (folder / "atlas.json").read_bytes()
    first = (folder / "index.html").read_text(encoding="utf-8")
    assert main(["atlas", str(folder / "atlas.json"), "--output", str(folder)]) == 0  # made again from its data
    assert "the input, kept as it is" in capsys.readouterr().out
    assert (folder / "atlas.json").read_bytes() == data_bytes
    again = (folder / "index.html").read_text(encoding="utf-8")

    def body(page):
        return page[page.index('<div id="atlas"'):page.index("<p class=\"read\">Records:")]

    assert body(again) == body(first) and "<svg" in body(first)


def _atlas_file(tmp_path, payload):
    path = tmp_path / "atlas.json"
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    return str(path)


GOOD_COLUMN = {"version": "2.12.1", "environments": [{}],
               "cells": [{"loop": "sweep", "strategy": "reuse_model", "status": "ok", "summary": {}, "env": 0}]}


@pytest.mark.parametrize("payload, needle", [
    ({"schema": "kerasbench-atlas", "version": 3, "columns": []}, "version 3, this kerasbench reads version 1 and 2"),
    ({"schema": "kerasbench-atlas", "version": 2, "columns": [dict(GOOD_COLUMN, floors={})]},
     "columns[0].floors is not a list of objects"),
    ({"schema": "kerasbench-atlas", "version": 2,
      "columns": [dict(GOOD_COLUMN, floors=[{"rss": {"kind": "default"}}],
                       cells=[dict(GOOD_COLUMN["cells"][0], floors=1)])]},
     "cells[0].floors is not the index of one of the column's 1 floors stamps"),
    ({"schema": "kerasbench-atlas", "version": 2,
      "columns": [dict(GOOD_COLUMN, floors=[{"rss": "calibration"}], cells=[dict(GOOD_COLUMN["cells"][0], floors=0)])]},
     "cells[0].summary.floors_from"),  # a stamp kept once is checked as the cell's own was
    ({"schema": "kerasbench-atlas", "version": 1, "columns": {}}, "no 'columns' list"),
    ({"schema": "kerasbench-atlas", "version": 1, "columns": [{"version": "2.12.1", "cells": []}]},
     "columns[0] is not an object with a 'version' string, an 'environments' list"),
    ({"schema": "kerasbench-atlas", "version": 1, "columns": [GOOD_COLUMN, GOOD_COLUMN]}, "TF 2.12.1 twice"),
    ({"schema": "kerasbench-atlas", "version": 1, "columns": [dict(GOOD_COLUMN, cells=[{"loop": 1}])]},
     "cells[0] has no 'loop' and 'strategy' strings"),
    ({"schema": "kerasbench-atlas", "version": 1,
      "columns": [dict(GOOD_COLUMN, cells=[dict(GOOD_COLUMN["cells"][0], env=3)])]},
     "cells[0].env is not the index of one of the column's 1 environments"),
    ({"schema": "kerasbench-atlas", "version": 1,
      "columns": [dict(GOOD_COLUMN, cells=[dict(GOOD_COLUMN["cells"][0], rss_mib=[0, "x"])])]},
     "cells[0].rss_mib is not a list of numbers"),
    ({"schema": "kerasbench-atlas", "version": 1,
      "columns": [dict(GOOD_COLUMN, cells=[dict(GOOD_COLUMN["cells"][0], rss_mib=[0, 1], rss_every=0)])]},
     "cells[0].rss_every is not a whole number"),
    ({"schema": "kerasbench-atlas", "version": 1,
      "columns": [dict(GOOD_COLUMN, cells=[GOOD_COLUMN["cells"][0]] * 2)]}, "sweep × reuse_model twice"),
    ('{"schema": "kerasbench-atlas", "version": 1, "columns": [', "truncated or corrupt JSON"),
])
def test_a_bad_atlas_file_is_one_line_exit_2_and_nothing_is_made(payload, needle, tmp_path, capsys):
    path = _atlas_file(tmp_path, payload)
    assert main(["atlas", path, "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and path in err, err
    assert not (tmp_path / "out").exists()


def test_the_atlas_command_refuses_a_file_as_its_folder_and_an_atlas_file_beside_records(tmp_path, capsys):
    paths = [os.path.join(REFERENCE, f"tf-{v}.json") for v in ("2.12.1", "2.21.0")]
    page = tmp_path / "index.html"
    page.write_text("mine")
    assert main(["atlas", *paths, "--output", str(page)]) == 2
    assert "it is not a folder" in capsys.readouterr().err and page.read_text() == "mine"
    assert main(["atlas", *paths, "--output", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    a = str(tmp_path / "a" / "atlas.json")
    assert main(["atlas", a, a, "--output", str(tmp_path / "b")]) == 2  # one atlas file, and records to add
    assert "Two atlas files (kerasbench-atlas)" in capsys.readouterr().err and not (tmp_path / "b").exists()
    # the records folder as the output would put index.html / atlas.json where compare reads records
    folder = tmp_path / "recs"
    folder.mkdir()
    (folder / "tf-2.12.1.json").write_bytes(open(paths[0], "rb").read())
    (folder / "tf-2.21.0.json").write_bytes(open(paths[1], "rb").read())
    for output in (folder, folder / "atlas"):  # the second made, refused, and removed again
        assert main(["atlas", str(folder), "--output", str(output)]) == 2
        assert "where it would be read as a records file" in capsys.readouterr().err
        assert sorted(os.listdir(folder)) == ["tf-2.12.1.json", "tf-2.21.0.json"]


def _records_file(path, records):
    path.write_text(json.dumps({"schema": "kerasbench-records", "records": records}))
    return str(path)


def test_records_beside_an_atlas_file_put_their_cells_into_its_columns_in_place(tmp_path, capsys):
    """The atlas keeps cells, not records: new records add cells to atlas.json (a new column, or a pair's cell
    replaced), checked as the atlas' own, written in place; a record of another protocol or --rejudge is refused."""
    paths = [os.path.join(REFERENCE, "protocol8", f"tf-{v}.json") for v in ("2.12.1", "2.21.0")]
    folder = tmp_path / "atlas"
    assert main(["atlas", *paths, "--output", str(folder)]) == 0
    capsys.readouterr()
    data = str(folder / "atlas.json")
    before = atlas.load([data])
    with open(paths[1]) as f:
        measured = [r for r in json.load(f)["records"] if r["status"] == "ok"]
    again = json.loads(json.dumps(measured[0]))  # the same pair of 2.21.0, measured again: another slope
    again["summary"]["growth_per_iter"] = 123.0 * KIB
    newer = json.loads(json.dumps(measured[1]))  # a release the atlas has no column of
    newer["environment"]["tensorflow"] = "2.22.0"
    added = _records_file(tmp_path / "new.json", [again, newer])
    old_page = (folder / "index.html").read_text(encoding="utf-8")

    assert main(["atlas", data, added, "--output", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "2 cell(s) of the records put into the atlas file's columns (1 in place of its own, 2 column(s))" in out
    assert sorted(os.listdir(folder)) == ["atlas.json", "index.html"]  # in place, atomically: no temp file left
    after = atlas.load([data])
    assert sorted(after, key=compare.version_key) == ["2.12.1", "2.21.0", "2.22.0"]
    pair = (again["loop"], again["strategy"])
    assert after["2.21.0"][pair][0]["summary"]["growth_per_iter"] == 123.0 * KIB
    assert list(after["2.22.0"]) == [(newer["loop"], newer["strategy"])]
    for v in ("2.12.1", "2.21.0"):  # every other cell as it was
        assert {k: c["summary"] for k, (c, _) in after[v].items() if k != pair} == \
               {k: c["summary"] for k, (c, _) in before[v].items() if k != pair}
    page = (folder / "index.html").read_text(encoding="utf-8")
    assert page != old_page and "2.22.0" in page

    kept = (folder / "atlas.json").read_bytes()
    unstamped = json.loads(json.dumps(measured[2]))
    del unstamped["summary"]["protocol"]  # judged by protocol 7 or older
    old = _records_file(tmp_path / "old.json", [unstamped])
    assert main(["atlas", data, old, "--output", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "old.json was judged by protocol 7 or older (unstamped)" in err
    assert "column TF 2.21.0" in err and "by protocol 8" in err
    assert main(["atlas", data, added, "--rejudge", "--output", str(folder)]) == 2
    assert "cells keep none" in capsys.readouterr().err
    assert (folder / "atlas.json").read_bytes() == kept  # refused: nothing written


def test_each_floors_stamp_is_written_once_under_the_map_and_each_cell_names_its_number():
    """A stamp is a column's: 2000 cells repeating its words were 7 % of the page. Each cell says "floors [n]", the
    legend under the map gives each stamp's words once, and a cell of another stamp names another number."""
    calibrated = {"rss": {"kind": "calibration", "file": "glibc-py3.11.json"}, "heap": {"kind": "settling"}}
    grouped = groups(("2.13.1", [record("sweep", "reuse_model"), record("kfold", "clear_session")]),
                     ("2.14.1", [record("sweep", "reuse_model"), record("kfold", "clear_session")]))
    for v, column in grouped.items():
        for rec, _ in column.values():
            rec["summary"]["floors_from"] = calibrated if v == "2.13.1" else {"rss": {"kind": "default"}}
    html = section(grouped)
    first = "RSS: calibration glibc-py3.11.json; heap: TF&#x27;s settling (made on this TF/Keras)"
    second = "RSS: the 64 KiB default (no calibration)"
    assert html.count(first) == 1 and html.count(second) == 1  # in the legend alone
    legend = html[html.index('<p class="read floors">'):]
    assert legend.index(f"[1] {first}") < legend.index(f"[2] {second}")
    cells = re.findall(r'<td data-ver="([^"]+)".*?</td>', html, flags=re.S)
    assert cells == ["2.13.1", "2.14.1"] * 2
    for v, cell in zip(cells, re.findall(r'<td data-ver="[^"]+".*?</td>', html, flags=re.S)):
        n = 1 if v == "2.13.1" else 2
        assert f"<li>floors [{n}], listed under the map</li>" in cell, cell


def test_nan_and_infinite_figures_are_left_out_of_the_data_and_read_as_n_a(tmp_path):
    """A run too short for a CI has NaN bounds: JSON has no NaN, and the page shows n/a for both."""
    short = record("sweep", "reuse_model", "grows", "leak", 300 * KIB)
    short["summary"].update(growth_ci_low=float("nan"), growth_ci_high=float("inf"), peak_loop=float("nan"))
    grouped = groups(("2.13.1", [record("sweep", "reuse_model")]), ("2.14.1", [short]))
    text = atlas.data_text(atlas.data(grouped))
    assert "NaN" not in text and "Infinity" not in text
    again = atlas.groups_of(json.loads(text), "atlas.json")
    assert section(again) == section(grouped) and "peak: n/a" in section(again)


def test_a_figure_is_kept_to_tenths_and_a_whole_one_written_as_a_whole_number():
    """One spelling per number in the published data: 4.96 rounds to 5 as 5.0 is 5 (before: 5.0 beside 5)."""
    assert [atlas._slim(v) for v in (4.96, 5.0, 4.94, -0.04, 12)] == [5, 5, 4.9, 0, 12]
    assert [type(atlas._slim(v)) for v in (4.96, 5.0, 4.94)] == [int, int, float]


def test_the_map_says_its_size_and_changes_and_each_column_its_keras(three):
    html = section(three)
    assert ("4 pairs × 3 versions: 11 cells measured; 1 change from one version to the next (1 worse; 1 verdict "
            "flip compare does not call); judged by protocol 7 or older (unstamped).") in html  # unstamped fixture
    for v, keras in (("2.15.1", "2.15.0"), ("2.16.2", "3.4.1")):
        rec = record("sweep", "reuse_model")
        rec["environment"] = {"keras": keras, "keras_package": "keras"}
        three[v] = {("sweep", "reuse_model"): (rec, "x.json")}
    html = section(three)
    assert '<small class="keras">Keras 2.15.0</small>' in html and '<small class="keras">Keras 3.4.1</small>' in html


def test_the_atlas_works_in_headless_chromium_and_its_address_keeps_the_view(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright (test extra)")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium; .ci/run does)")
    paths = [os.path.join(REFERENCE, f"tf-{v}.json") for v in ("2.12.1", "2.21.0")]
    page_path = atlas.write(paths, str(tmp_path / "atlas"))[-1]
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        errors, requests = [], []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("request", lambda r: requests.append(r.url))
        page.goto(f"file://{page_path}#loop=sweep&tf=2.21.0&changed=1")  # a link to a view
        assert page.input_value("#atlas-loop") == "sweep" and page.input_value("#atlas-tf") == "2.21.0"
        rows = page.eval_on_selector_all("table.atlas tbody tr:not(.hidden)", "els => els.map(e => e.dataset.loop)")
        assert rows and set(rows) == {"sweep"}  # only sweep's rows with a change on 2.21.0
        assert page.eval_on_selector_all("table.atlas tbody tr:not(.hidden)",
                                         "els => els.every(e => e.querySelector('td.changed[data-ver=\"2.21.0\"]'))")
        heads = page.eval_on_selector_all("th.ver", "els => els.filter(e => e.offsetParent).map(e => e.dataset.ver)")
        assert heads == ["2.12.1", "2.21.0"]  # the version and the one it is read against
        changes = page.eval_on_selector_all("ol.changes > li:not(.hidden)", "els => els.map(e => e.dataset.loop)")
        assert changes and set(changes) == {"sweep"}
        other = page.locator('tr:not(.hidden) td[data-ver="2.12.1"]').last  # the last row's: nothing clips it
        other.hover()
        box, view = other.locator("ul.more").bounding_box(), page.evaluate("document.documentElement.scrollHeight")
        assert other.locator("ul.more").is_visible() and box["height"] > 40 and box["y"] + box["height"] <= view
        cell = page.locator('tr:not(.hidden) td.changed[data-ver="2.21.0"]').first
        cell.click()
        assert "open" in cell.get_attribute("class") and cell.locator("ul.more").is_visible()
        page.select_option("#atlas-strategy", "clear_session")  # grows, then undecided, but 18.9× the slope: ▲
        assert "strategy=clear_session" in page.evaluate("location.hash")
        assert page.locator("ol.changes > li.worse:not(.hidden) svg.spark").is_visible()  # the change, drawn
        page.select_option("#atlas-loop", "tf_data")
        page.select_option("#atlas-strategy", "rebuild_dataset")  # flat, then inconclusive: ◆, shown on demand
        undecided = page.locator("ol.changes > li.other:not(.hidden)")
        assert undecided.count() == 1 and not undecided.is_visible()  # in the closed list of the flips not counted
        assert page.locator("table.atlas tbody tr:not(.hidden)").count() == 0  # only rows with a change: none
        page.check("#atlas-undecided")
        assert "undecided=1" in page.evaluate("location.hash") and undecided.locator("svg.spark").is_visible()
        assert page.locator("tr:not(.hidden) td.undecided .glyph").is_visible()  # ◆ on the map too
        # the version headers and the row names stay in view when the map is scrolled
        page.set_viewport_size({"width": 500, "height": 300})
        page.select_option("#atlas-loop", "")
        page.select_option("#atlas-strategy", "")
        page.evaluate("window.scrollTo(400, document.querySelector('table.atlas').getBoundingClientRect().bottom"
                      " + window.scrollY - 120)")
        head = page.locator("table.atlas thead th.ver").first.bounding_box()
        name = page.locator("table.atlas tbody tr:not(.hidden) th.pair").last.bounding_box()
        assert abs(head["y"]) < 1 and abs(name["x"]) < 1, (head, name)
        browser.close()
    assert errors == [] and {r.split("#")[0] for r in requests} == {f"file://{page_path}"}


def test_a_release_on_several_pythons_keeps_its_main_python_as_its_plain_column():
    """compare labels every Python of a release measured on several (2.16.2+py3.10, 2.16.2+py3.11): the one on the
    Python of the other releases is the release's plain column, so 2.17.1 is read against it, with triage offered."""
    def on(python, *args):
        rec = record("sweep", "clear_session_del_gc", *args)
        rec["environment"] = {"python": python}
        return rec

    html = section(groups(("2.15.1", [on("3.11.7")]), ("2.16.2+py3.10", [on("3.10.14")]),
                                ("2.16.2+py3.11", [on("3.11.7")]), ("2.17.1", [on("3.11.7", "grows", "leak")])))
    heads = re.findall(r'<th class="ver" data-ver="([^"]+)"', html)
    assert heads == ["2.15.1", "2.16.2", "2.16.2+py3.10", "2.17.1"]
    assert '<small class="prev">vs 2.16.2</small>' in html  # 2.17.1's previous: 2.16.2 on the same Python
    assert "kerasbench triage --good 2.16.2 --bad 2.17.1 --loop sweep --strategy clear_session_del_gc" in html
    report = on("3.11.7", "grows", "leak")  # a public report's row: its table says the map's labels too
    report.update(loop="repro", strategy="reuse_model",
                  spec={"repro": "/x/kerasbench/examples/reports/tf33009_predict.py"})
    both = groups(("2.15.1", [on("3.11.7")]), ("2.16.2+py3.10", [on("3.10.14")]), ("2.16.2+py3.11", [on("3.11.7")]))
    both["2.16.2+py3.11"][("report:tf33009_predict", "reuse_model")] = (report, "r.json")
    table = atlas.page([], both).split('<table class="reports">')[1]
    assert "<th>TF 2.16.2</th>" in table and "py3.11" not in table


def test_no_machine_folder_in_the_pages_and_the_data(tmp_path, monkeypatch):
    """The report and the atlas are meant to be shared: the records' folder, a calibration file in site-packages, a
    reason or a why naming a file are named by their last part, never by a machine's absolute folder."""
    site = "/usr/lib/python3.11/site-packages/kerasbench/calibration/glibc-x.json"
    folder = tmp_path / "my-records"
    folder.mkdir()
    for v in ("2.12.1", "2.21.0"):
        payload = json.load(open(os.path.join(REFERENCE, f"tf-{v}.json")))
        first, second = payload["records"][:2]
        first["summary"].update(floor_source=f"calibration {site} (fits glibc)", why=f"see {tmp_path}/trace.txt")
        first["summary"]["floors_from"] = {"rss": {"kind": "given", "source": f"--floor-file {site}"}}
        second.update(status="failed", reason=f"worker died: {tmp_path}/repro.py line 3")
        (folder / f"tf-{v}.json").write_text(json.dumps(payload))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # the records outside the working folder: named by their own name
    assert main(["report", str(folder), "--output", str(tmp_path / "report.html")]) == 0
    written = atlas.write([str(folder)], str(tmp_path / "atlas"))
    for path in [str(tmp_path / "report.html"), *written]:
        text = open(path, encoding="utf-8").read()
        assert str(tmp_path) not in text and "/usr/lib" not in text and "site-packages" not in text, path
        assert "glibc-x.json" in text or path.endswith("atlas.json") and "repro.py line 3" in text, path
    report_page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Records: my-records." in report_page and "pairs in my-records" in report_page
    assert "calibration glibc-x.json (fits glibc)" in report_page and "worker died: repro.py line 3" in report_page
    monkeypatch.chdir(tmp_path)  # inside the working folder: relative to it
    assert "Records: my-records/tf-2.12.1.json." in atlas.page([str(folder / "tf-2.12.1.json")], {})


def test_the_atlas_reads_each_versions_key_a_bounded_number_of_times(monkeypatch):
    """Its cost is linear in its columns: twice the columns, about twice the version keys read (a column's previous
    found by sorting every column again was quadratic: 3000 columns did not finish in two minutes)."""
    calls = []

    def counted(version):
        calls.append(version)
        return compare.version_key(version)

    import importlib

    # each part of the atlas that sorts by version (the modules: the package's `data` is also one of its functions)
    parts = [importlib.import_module(f"kerasbench.atlas.{name}") for name in ("model", "changes", "data", "html")]
    patched = [module for module in parts if hasattr(module, "version_key")]
    assert patched, "no part of the atlas reads version_key: this test counts nothing"
    for module in patched:
        monkeypatch.setattr(module, "version_key", counted)

    def keys_read(n):
        calls.clear()
        columns = [(f"2.{i}.0", [record("sweep", "reuse_model", *(("grows", "leak") if i % 3 else ()))])
                   for i in range(n)]
        grouped = groups(*columns)
        section(grouped), atlas.data(grouped)
        return len(calls)

    small, large = keys_read(40), keys_read(160)
    assert large <= 4.5 * small, (small, large)


def _small_atlas():
    """A small valid atlas file's payload: two releases, a change with its series, a skipped and a failed cell."""
    grouped = groups(("2.13.1", [with_ci(1646, 973, 2519), record("sweep", "gpu_growth_on", status="skipped",
                                                                  reason="needs a GPU")]),
                     ("2.14.1", [with_ci(6196, 6167, 6252), record("sweep", "gpu_growth_on", status="failed",
                                                                   reason="killed")]))
    for v, column in grouped.items():
        for rec, _ in column.values():
            rec["environment"] = {"machine_name": "vm", "tensorflow": v, "keras": "2.14.0", "keras_package": "keras",
                                  "python": "3.11.7", "cpu_model": "x", "cpu_count": 2, "memory_total": 8 << 30,
                                  "allocator": "glibc", "libc": "glibc-2.36", "nightly": {"day": "2026-05-14"}}
            rec["summary"]["floors_from"] = {"rss": {"kind": "calibration", "file": "c.json"}, "heap": None}
            rec["summary"].update(protocol=8, why="a step", heap_floor=KIB, growth_kind="leak")
            rec["rss_every"], rec["rss_mib"] = 1, [0.0, 1.5, 3.0]
    return json.loads(atlas.data_text(atlas.data(grouped)))


def _places(value, at=()):
    """Every place in a JSON value: (path of keys and indices, the value there)."""
    yield at, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        yield from _places(inner, (*at, key))


def test_every_field_of_an_atlas_file_of_another_type_is_one_line_exit_2_or_a_page(tmp_path, capsys):
    """Fuzz (issue #40): each field of a small valid atlas file, in turn, given another type or taken away: no
    traceback; exit 2 with one line naming the file and nothing written, or a page."""
    base = _small_atlas()
    others = (None, 7, True, "x", [1], {"a": [1]})
    path, tried, refused = str(tmp_path / "atlas.json"), 0, 0
    for at, value in list(_places(base)):
        if not at:
            continue
        for other in (*others, KeyError):
            if other is not KeyError and type(other) is type(value) and other == value:
                continue
            payload = json.loads(json.dumps(base))
            holder = payload
            for key in at[:-1]:
                holder = holder[key]
            if other is KeyError:
                if isinstance(holder, list):
                    continue
                del holder[at[-1]]
            else:
                holder[at[-1]] = other
            with open(path, "w") as f:
                json.dump(payload, f)
            out = tmp_path / "out"
            rc = main(["atlas", path, "--output", str(out)])
            err = capsys.readouterr().err
            where = f"{'.'.join(map(str, at))} = {other!r}"
            assert rc in (0, 2), (where, rc, err)
            if rc == 2:
                refused += 1
                assert err.count("\n") == 1 and path in err and "Traceback" not in err, (where, err)
                assert not out.exists(), where
            else:
                assert (out / "index.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>"), where
                shutil.rmtree(out)
            tried += 1
    print(f"{tried} tried, {refused} refused")
    assert tried > 400 and refused > 150, (tried, refused)


def test_a_backend_or_a_python_is_read_against_its_own_release_first():
    """The torch column beside TF 2.21.0 says what the backend changes: read against 2.21.0 (not 2.20.0, which
    would mix a release's change into the backend's); a Python's first column too; tf_keras goes on from Keras 2."""
    versions = ["2.15.1", "2.16.2", "2.16.2+tf_keras", "2.20.0", "2.21.0", "2.21.0+torch", "2.21.0+py3.12"]
    prev = atlas.previous_all(versions)
    assert (prev["2.21.0+torch"], prev["2.21.0+py3.12"], prev["2.16.2+tf_keras"]) == ("2.21.0", "2.21.0", "2.15.1")
    assert atlas.previous("2.21.0+jax", ["2.20.0"]) == "2.20.0"  # its release's plain column not measured
    # a first tf_keras column goes on from the last release, not from a nightly of its own release's branch
    assert atlas.previous("2.21.0+tf_keras", ["2.20.0", "2.21.0-dev20250819", "2.21.0"]) == "2.20.0"
    assert commands("sweep", "clear_session_del_gc", "2.21.0", "2.21.0+torch") == [
        ("which backend carries it", "kerasbench attribute --backends tensorflow,torch --tf 2.21.0 --loop sweep "
                                     "--strategy clear_session_del_gc"),  # both in the columns' environments
        ("which cleanup steps it needs there", "kerasbench ablate --loop sweep --tf 2.21.0 --backend torch")]
    assert [c for _, c in commands("sweep", "reuse_model", "2.21.0", "2.21.0+py3.12")] == [
        "kerasbench ablate --loop sweep --tf 2.21.0 --python 3.12"]
    assert [w for w, _ in commands("control", "control_noop", "2.21.0", "2.21.0+torch")] == [
        "which backend carries it"]  # nothing to take apart
    report = commands("report:tf61791_fit_clear_session", "clear_session_del_gc", "2.21.0", "2.21.0+jax")
    assert report[0][1] == ("kerasbench attribute --backends tensorflow,jax --tf 2.21.0 --repro "
                            "kerasbench/examples/reports/tf61791_fit_clear_session.py --strategy clear_session_del_gc")


def test_a_flip_read_at_other_floors_is_not_counted_as_a_change():
    """Python 3.12 has no calibration: its heap is judged at the 64 KiB default. A reused model's heap, +1.4
    KiB/iteration `grows` at 3.11's settling floors and +1.5 `flat` at 3.12's default, is not a Python's change."""
    def cell(heap_verdict, kinds):
        rec = record("inference", "reuse_model", "flat", "leak" if heap_verdict == "grows" else "flat", 2.7 * KIB)
        rec["summary"].update(heap_verdict=heap_verdict, floors_from={s: {"kind": k} for s, k in zip(("rss", "heap"),
                                                                                                   kinds)})
        return rec
    before = cell("grows", ("calibration", "settling"))
    kind, why = atlas.mark(before, cell("flat", ("default", "default")))
    assert kind == "other" and "judged at other floors (RSS: calibration → default, heap: settling → default)" in why
    assert atlas.mark(before, cell("flat", ("calibration", "settling")))[0] == "better"  # same floors: a change
    assert atlas.floors_apart(record("sweep", "reuse_model"), before) == ""  # unstamped: unknown, taken as alike
    settled = cell("flat", ("default", "default"))  # a `run` before its default was stamped so: given, its text
    settled["summary"]["floors_from"] = {s: {"kind": "given", "source": "default (no calibration for glibc …)"}
                                         for s in ("rss", "heap")}
    assert atlas.floors_apart(settled, cell("flat", ("default", "default"))) == ""  # the same floor: alike
    assert "RSS: calibration → default" in atlas.floors_apart(before, settled)


def test_the_page_says_how_far_to_trust_a_column_scored_against_its_long_runs(tmp_path, capsys):
    """`--reference FILE`: the column of the file's release scored as shown (score.brief) under the map; a right
    verdict whose slope is a ramp's is counted apart; a reference of a release no column is: exit 2, nothing
    written; without one, no such lines."""
    from test_score import flat, line, ramp, record as measured, save

    heap = line(300, 256 * KIB, 100 * MIB, 256)
    reference = save(tmp_path, "tf-2.21.0.json", [
        measured("clear_session", ramp(300, 4 * MIB, 256 * KIB), heap, floor=64 * KIB),
        measured("reuse_model", flat(300, noise=8 * KIB), flat(300, 100 * MIB), floor=64 * KIB)])
    short = [measured("clear_session", ramp(12, 4 * MIB, 256 * KIB), line(12, 256 * KIB, 100 * MIB, 256),
                      floor=64 * KIB),
             measured("reuse_model", flat(20, noise=8 * KIB), flat(20, 100 * MIB), floor=64 * KIB)]
    records = [save(tmp_path, f"{v}.json", [dict(r, environment=dict(r["environment"], tensorflow=v))
                                            for r in short]) for v in ("2.20.0", "2.21.0")]
    folder = tmp_path / "atlas"
    assert main(["atlas", *records, "--output", str(folder)]) == 0
    assert "How far to trust a cell" not in (folder / "index.html").read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["atlas", str(folder / "atlas.json"), "--output", str(folder), "--reference", reference]) == 0
    html = (folder / "index.html").read_text(encoding="utf-8")
    assert "<b>How far to trust a cell</b>" in html
    said = re.search(r'<div class="trust">.*?<li>(.*?)</li>', html, re.S).group(1)
    assert said.startswith("TF 2.21.0: 2 pairs against their long runs (tf-2.21.0.json: a median 300 iterations, 1 "
                           "repeat each): the RSS verdict agrees on 100% of the 2 they decide"), said
    assert "RSS slopes within ×1.5 of theirs for 0 of the 1 pairs both read grows (the other 1 ×16 … ×16" in said
    # a reference no column is: one line naming it, exit 2, the page as it was
    other = save(tmp_path, "tf-2.12.1.json", [dict(r, environment=dict(r["environment"], tensorflow="2.12.1"))
                                              for r in json.loads(open(reference).read())["records"]])
    before = (folder / "index.html").read_bytes()
    assert main(["atlas", str(folder / "atlas.json"), "--output", str(folder), "--reference", other]) == 2
    err = capsys.readouterr().err
    assert "tf-2.12.1.json holds long runs of TF 2.12.1, which no column of the atlas is" in err
    assert len(err.strip().splitlines()) == 1 and (folder / "index.html").read_bytes() == before
    # before any command of --answer runs (hours): its plan is not even printed
    assert main(["atlas", str(folder / "atlas.json"), "--output", str(folder), "--answer", "--answer-plan",
                 "--reference", other]) == 2
    said = capsys.readouterr()
    assert "which no column of the atlas is" in said.err and "command(s)" not in said.out


def test_a_folder_of_references_scores_the_columns_it_shows(tmp_path, capsys):
    """`--reference FOLDER` (the workflow's: a run measures the releases it was asked for): each of its files whose
    release the atlas shows scores that column; the others are passed over, not refused; a folder with no .json
    file is one line naming it, exit 2."""
    from test_score import flat, record as measured, save

    refs = tmp_path / "refs"
    refs.mkdir()
    long = [measured("reuse_model", flat(300, noise=8 * KIB), flat(300, 100 * MIB), floor=64 * KIB)]
    for v in ("2.12.1", "2.21.0"):
        save(refs, f"tf-{v}.json", [dict(r, environment=dict(r["environment"], tensorflow=v)) for r in long])
    short = [measured("reuse_model", flat(20, noise=8 * KIB), flat(20, 100 * MIB), floor=64 * KIB)]
    records = [save(tmp_path, f"{v}.json", [dict(r, environment=dict(r["environment"], tensorflow=v))
                                            for r in short]) for v in ("2.20.0", "2.21.0")]
    folder = tmp_path / "atlas"
    assert main(["atlas", *records, "--output", str(folder), "--reference", str(refs)]) == 0
    html = (folder / "index.html").read_text(encoding="utf-8")
    said = re.findall(r'<div class="trust">.*?</div>', html, re.S)[0]
    assert "TF 2.21.0: 1 pair against their long runs (tf-2.21.0.json" in said and "TF 2.12.1" not in said, said
    empty = tmp_path / "empty"
    empty.mkdir()
    capsys.readouterr()
    assert main(["atlas", *records, "--output", str(folder), "--reference", str(empty)]) == 2
    err = capsys.readouterr().err
    assert "empty is a folder with no .json file" in err and len(err.strip().splitlines()) == 1, err


def test_the_atlas_never_writes_through_a_link_onto_one_of_its_inputs(tmp_path, capsys):
    """out/atlas.json a link to an input records file: before, the atlas took the link for its own data and wrote the
    map through it (rc 0, the records file now atlas data); now the output is refused, one line, the input intact."""
    from test_compare import synthetic

    paths = []
    for i, version in enumerate(("2.13.1", "2.14.1", "2.15.1")):
        path = tmp_path / f"v{i}.json"
        path.write_text(json.dumps(synthetic(version, (i + 1) * 64 * KIB, repeats=1, n=12)))
        paths.append(str(path))
    out = tmp_path / "out"
    out.mkdir()
    os.symlink("../v1.json", out / atlas.DATA)
    before = (tmp_path / "v1.json").read_bytes()
    assert main(["atlas", *paths, "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "v1.json" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "v1.json").read_bytes() == before and os.path.islink(out / atlas.DATA)


def test_a_mark_between_cells_of_two_machines_is_pale_and_says_which():
    """A change between two columns measured on different machines (another CPU model) that nothing measured again
    is drawn pale, its note naming the machines; the first screen counts it as across machines."""
    before = record("sweep", "clear_session_del_gc")
    after = record("sweep", "clear_session_del_gc", "grows", "leak", 3600 * KIB)
    before["environment"] = {"machine_name": "epyc-vm", "cpu_model": "AMD EPYC 7B13", "cpu_count": 2}
    after["environment"] = {"machine_name": "xeon-vm", "cpu_model": "Intel Xeon 8375C", "cpu_count": 2}
    html = section(groups(("2.13.1", [before]), ("2.14.1", [after])))
    note = atlas.ACROSS.format("epyc-vm vs xeon-vm")
    assert 'data-unconfirmed="1"' in row(html, "sweep", "clear_session_del_gc")[1]
    assert f'<span class="unconfirmed">{atlas.esc(note)}</span>' in html
    assert "Marks by what measuring them again said: 1 across machines. Solid: 0" in html


def test_a_growing_cell_s_colour_says_how_much_grows():
    """+5.6 and +7,123 KiB/iteration both read `grows`; their reds differ, on one log scale for every column."""
    from kerasbench.atlas.html import shade_of

    light = [int(re.search(r"hsl\(8,75%,(\d+)%\)", shade_of(v * KIB))[1]) for v in (5.6, 64, 1024, 7123, 64 * 1024)]
    assert light == sorted(light, reverse=True) and light[0] - light[-2] > 25 and light[-2] >= light[-1]
    html = section(groups(("2.13.1", [record("sweep", "reuse_model", "grows", "leak", 6 * KIB)]),
                          ("2.14.1", [record("sweep", "reuse_model", "grows", "leak", 7123 * KIB)])))
    cells = row(html, "sweep", "reuse_model")
    assert shade_of(6 * KIB) in cells[0] and shade_of(7123 * KIB) in cells[1]
