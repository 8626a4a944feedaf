"""Each change of the atlas answered (kerasbench.answers): the commands its list names, run once each and kept."""

import dataclasses
import io
import json

import pytest

from kerasbench import answers, atlas
from kerasbench.errors import UsageError
from answered import entry, fake, question
from test_atlas import KIB, groups, record


def two_changes():
    """sweep × clear_session_del_gc and sweep × clear_session both turn flat → grows at 2.14.1."""
    return groups(("2.13.1", [record("sweep", "clear_session_del_gc"), record("sweep", "clear_session"),
                              record("sweep", "reuse_model")]),
                  ("2.14.1", [record("sweep", "clear_session_del_gc", "grows", "leak", 3600 * KIB),
                              record("sweep", "clear_session", "grows", "leak", 3500 * KIB),
                              record("sweep", "reuse_model")]))


def test_each_command_of_the_changes_is_asked_once_with_the_changes_it_explains():
    asked = atlas.questions(two_changes())
    commands = [q.command for q in asked]
    assert len(commands) == len(set(commands)) == 5  # triage and attribute per change, one ablation of the loop
    [ablate] = [q for q in asked if " ablate " in f" {q.command} "]
    assert ablate.command == "kerasbench ablate --loop sweep --tf 2.14.1"
    assert ablate.changes == ("sweep × clear_session, TF 2.13.1 → 2.14.1",
                              "sweep × clear_session_del_gc, TF 2.13.1 → 2.14.1")
    assert "kerasbench triage --good 2.13.1 --bad 2.14.1 --loop sweep --strategy clear_session_del_gc" in commands
    assert not any("reuse_model" in c for c in commands)  # no change: nothing to answer


def test_the_most_telling_commands_come_first():
    """A budget of commands answers the most of the map: a label's flip before slope changes only, then the command
    that explains more changes, then the larger ratio of slopes; the list under the map keeps its order."""
    def rec(loop, strategy, verdict, kind, slope):
        r = record(loop, strategy, verdict, kind, slope)
        r["summary"].update(growth_ci_low=slope * 0.98, growth_ci_high=slope * 1.02)
        return r

    g = groups(("2.13.1", [rec("sweep", "clear_session", "grows", "leak", 3000 * KIB),
                           rec("sweep", "reuse_model", "grows", "leak", 500 * KIB),
                           rec("kfold", "clear_session_del_gc", "flat", "flat", 1 * KIB)]),
               ("2.14.1", [rec("sweep", "clear_session", "grows", "leak", 4500 * KIB),  # ×1.5, no flip
                           rec("sweep", "reuse_model", "grows", "leak", 1500 * KIB),  # ×3, no flip
                           rec("kfold", "clear_session_del_gc", "grows", "leak", 3600 * KIB)]))  # flat → grows
    listed = [(c[0], c[1]) for c in atlas.counted_changes(g)]
    assert listed[0][0] == "sweep" and listed[-1] == ("kfold", "clear_session_del_gc")  # the page: sweep first
    asked = [q.command for q in atlas.questions(g)]
    assert len(asked) == len(set(asked)) == 8
    assert all("--loop kfold" in c for c in asked[:3])  # the flip's triage, attribute and ablation first
    assert asked[3] == "kerasbench ablate --loop sweep --tf 2.14.1"  # explains both sweep changes
    assert asked[4:] == ["kerasbench triage --good 2.13.1 --bad 2.14.1 --loop sweep --strategy reuse_model",
                         "kerasbench attribute --good 2.13.1 --bad 2.14.1 --loop sweep --strategy reuse_model",
                         "kerasbench triage --good 2.13.1 --bad 2.14.1 --loop sweep --strategy clear_session",
                         "kerasbench attribute --good 2.13.1 --bad 2.14.1 --loop sweep --strategy clear_session"]


def test_a_budget_gives_each_change_one_answer_before_any_a_second(tmp_path):
    """With the answers file read (`--answer`), the commands not yet run that answer a change with no answer come
    first, the one answering the most of them first; a run command that gave no answer leaves its changes open; a
    command a wider nightly triage answers comes last."""
    telling = [q.command for q in atlas.questions(two_changes())]
    ablate, triage_gc, attribute_gc, triage_cs, attribute_cs = telling  # the ablation explains both changes
    fresh = atlas.questions(two_changes(), answered={})
    assert [q.command for q in fresh] == telling and [q.first for q in fresh] == [True] + [False] * 4
    failed = {ablate: entry(ablate, rc=1, tail=["out of memory"])}
    again = atlas.questions(two_changes(), answered=failed)
    # a failure is asked again, after the commands that answer a change with no answer yet
    assert [q.command for q in again] == [triage_gc, triage_cs, ablate, attribute_gc, attribute_cs]
    assert [q.first for q in again] == [True, True, False, False, False]
    done = {ablate: entry(ablate, "The full cleanup is flat.")}
    assert not any(q.first for q in atlas.questions(two_changes(), answered=done))
    out, ran = io.StringIO(), []
    answers.answer_all(again, str(tmp_path / answers.FILE), out, limit=1,
                       run=fake("Answer: TF 2.14.0 is the first release …", ran=ran))
    assert "; the first 2 each answer a change with no answer yet" in out.getvalue()
    assert ran[0][3:5] == ["triage", "--good"] and len(ran) == 1
    # a wider triage's answer covers the part of a split change holding the nightly it found: asked last
    def triage(good, bad, strategy):
        return f"kerasbench triage --good nightly:{good} --bad nightly:{bad} --loop sweep --strategy {strategy}"

    found = "Answer: TF 2.22.0.dev20260731 is the first nightly where sweep × clear_session behaves like the bad end."
    split = dataclasses.replace(question(triage("2026-07-15", "2026-07-31", "clear_session")), changes=("a",))
    other = dataclasses.replace(question(triage("2026-07-15", "2026-07-31", "reuse_model")), changes=("b",))
    wide = {triage("2026-07-15", "2026-08-08", "clear_session"): entry(triage("2026-07-15", "2026-08-08",
                                                                               "clear_session"), found)}
    assert [(q.command, q.first) for q in atlas.first_answers([split, other], wide)] == [
        (other.command, True), (split.command, False)]


def test_a_release_measured_on_several_pythons_is_asked_as_its_plain_column():
    """2.16.2 on 3.11 and 3.12 (labelled by compare), 2.17.1 on 3.11: the change 2.16.2 → 2.17.1 is the plain
    column's (main_axis), and its commands are asked, not a KeyError on the label the records do not carry."""
    def on(python, *records):
        for r in records:
            r["environment"] = {"python": f"{python}.7", "tensorflow": "x"}
        return list(records)

    g = groups(("2.16.2+py3.11", on("3.11", record("sweep", "clear_session"))),
               ("2.16.2+py3.12", on("3.12", record("sweep", "clear_session"))),
               ("2.17.1", on("3.11", record("sweep", "clear_session", "grows", "leak", 3600 * KIB))))
    asked = [q.command for q in atlas.questions(g)]
    assert "kerasbench triage --good 2.16.2 --bad 2.17.1 --loop sweep --strategy clear_session" in asked


TRIAGE_ANSWER = "Answer: TF 2.14.0 is the first release where sweep × clear_session_del_gc behaves like 2.14.1"
ABLATE_ANSWER = "no cleanup: grows; full cleanup (3 steps): grows."


def test_each_commands_answer_is_its_json_object_not_its_printed_text(tmp_path):
    """The answer is the object the command's --json holds (answers.result), each name of the question checked and
    its argv rendered from its fields; printed text is never read for meaning: a command that prints an answer line
    but writes no answer object did not answer (a failure, asked again)."""
    asked = atlas.questions(two_changes())
    path = str(tmp_path / answers.FILE)
    ran = []
    data = answers.answer_all(asked[:1], path, io.StringIO(), run=fake("Answer: found", ran=ran, ends="regressed"))
    argv = ran[0]
    assert argv[:3] == [argv[0], "-m", "kerasbench"] and argv[3:-2] == asked[0].argv() and argv[-2] == "--json"
    kept = data["answers"][asked[0].command]
    assert kept["result"]["text"] == "Answer: found" and kept["result"]["ends"] == "regressed"
    assert answers.ends_verdict(kept) == "regressed" and kept["question"] == asked[0].data()
    printed_only = answers.answer_all(asked[1:2], path, io.StringIO(), run=lambda argv: (0, "Answer: TF 2.14.0 …"))
    failed = printed_only["answers"][asked[1].command]
    assert "result" not in failed and not answers.answered(failed)
    assert failed["tail"][-1] == "(exit 0 and no answer object in its --json)"


def test_answers_are_kept_one_by_one_and_a_second_call_goes_on_where_the_first_stopped(tmp_path):
    asked = atlas.questions(two_changes())
    path = str(tmp_path / "answers.json")
    ran = []

    def run(argv):
        if len(ran) == 2:
            ran.append(argv)
            raise KeyboardInterrupt  # Ctrl-C while the third command runs
        return fake("The full cleanup is flat." if "ablate" in argv else "Answer: TF 2.14.0 is the first", ran=ran)(
            argv)

    clock = iter(range(0, 1000, 7)).__next__
    with pytest.raises(KeyboardInterrupt):
        answers.answer_all(asked, path, io.StringIO(), config="asv.matrix.json", extra=["--jobs", "2"], run=run,
                           clock=clock)
    kept = json.loads(open(path).read())["answers"]
    assert list(kept) == [q.command for q in asked[:2]]  # the two that finished, nothing of the third
    assert ran[0][-6:-2] == ["--config", answers.check_config("asv.matrix.json"), "--jobs", "2"]
    assert ran[0][1:3] == ["-m", "kerasbench"]
    assert kept[asked[0].command]["seconds"] == 7 and kept[asked[0].command]["rc"] == 0
    ran.clear()
    out = io.StringIO()
    data = answers.answer_all(asked, path, out, run=fake(rc=2, output="Traceback\nboom", ran=ran), clock=clock)
    assert len(ran) == 3 and "5 command(s) answer the atlas's changes: 2 answered" in out.getvalue()
    failed = data["answers"][asked[-1].command]
    assert "result" not in failed and failed["tail"] == ["Traceback", "boom"]
    assert answers.shown(failed) == "no answer (exit 2, 0:07 to answer): boom"
    assert answers.shown(kept[asked[0].command]).endswith("(0:07 to answer)")
    assert "no answer (exit 2, asked again next call): boom" in out.getvalue()
    # only an answer is an answer: the three that failed (a usage error, a signal) are asked again, the rest not
    ran.clear()
    out = io.StringIO()
    answers.answer_all(asked, path, out, run=fake(rc=-9, ran=ran))
    assert len(ran) == 3 and "3 to run, 3 of them failed before and asked again" in out.getvalue()
    assert answers.read(path)["answers"][asked[-1].command]["rc"] == -9
    ran.clear()
    answers.answer_all(asked, path, io.StringIO(), run=fake("Answer: x", ran=ran))
    assert len(ran) == 3
    ran.clear()
    answers.answer_all(asked, path, io.StringIO(), run=fake("Answer: x", ran=ran))
    assert ran == []  # every command answered: none run again


def test_a_config_that_is_not_there_is_one_line_before_any_command(tmp_path):
    ran = []
    with pytest.raises(UsageError, match="nonexistent.json") as e:
        answers.answer_all(atlas.questions(two_changes()), str(tmp_path / answers.FILE), io.StringIO(),
                           config=str(tmp_path / "nonexistent.json"), run=fake("Answer: x", ran=ran))
    assert ran == [] and "\n" not in str(e.value) and not (tmp_path / answers.FILE).exists()


def test_a_command_refused_for_a_full_disk_is_not_kept_and_the_call_stops(tmp_path, monkeypatch):
    """The disk guard's refusal is the machine's, not the question's: kept as a failure it would never run again
    (and a night of the workflow would mark every command left so, a second each); the call stops there instead."""
    from kerasbench import install

    monkeypatch.setenv(install.MIN_FREE_VAR, "1e9")  # the guard's own message, from a disk that is never enough
    with pytest.raises(UsageError) as refused:
        install.check_free(str(tmp_path), "tf-nightly")
    asked = atlas.questions(two_changes())
    path, ran, out = str(tmp_path / answers.FILE), [], io.StringIO()
    answers.answer_all(asked, path, out, run=fake(rc=2, output=f"kerasbench: {refused.value}", ran=ran))
    assert len(ran) == 1 and answers.read(path)["answers"] == {}
    assert "stopped: the disk is full, 5 of 5 left for another call" in out.getvalue()
    answers.answer_all(asked, path, io.StringIO(), run=fake("Answer: TF 2.14.0 is", ran=ran), limit=1)
    assert len(ran) == 2 and list(answers.read(path)["answers"]) == [asked[0].command]  # run again once there is room


@pytest.mark.parametrize("content, needle", [
    ('{"schema": "kerasbench-atlas"}', "Not a kerasbench answers file"),
    ('{"schema": "kerasbench-answers", "version": 9, "answers": {}}', "version 9"),
    ('{"schema": "kerasbench-answers", "version": 1, "answers": {}}', "tools/answers_v1_to_v2.py converts it"),
    ('{"schema": "kerasbench-answers", "version": 2, "answers": {"x": {"answer": 3}}}', "without a question"),
    ('{"schema": "kerasbench-answers", "version": 2, "answers": {"kerasbench ablate --loop sweep --tf 2.14.1": '
     '{"question": {"verb": "ablate", "loop": "sweep", "tf": "2.14.1"}, "seconds": "7"}}}', "seconds '7' of the wrong"),
    ('{"schema": "kerasbench-answers", "version": 2, "answers": {"kerasbench ablate --loop x --tf 2.14.1": '
     '{"question": {"verb": "ablate", "loop": "sweep", "tf": "2.14.1"}}}}', "not the command it is kept under"),
    ('{"schema": "kerasbench-answers", "version": 2, "answers": {"kerasbench ablate --loop sweep --tf 2.14.1": '
     '{"question": {"verb": "ablate", "report": "../../../../tmp/evil", "tf": "2.14.1"}}}}', "without a question"),
])
def test_a_bad_answers_file_is_one_line(tmp_path, content, needle):
    path = tmp_path / "answers.json"
    path.write_text(content)
    with pytest.raises(UsageError, match=needle) as e:
        answers.read(str(path))
    assert "\n" not in str(e.value)


def test_the_atlas_shows_each_answer_beside_its_command_and_says_how_many_were_run(tmp_path):
    grouped = two_changes()
    asked = [q for q in atlas.questions(grouped) if " ablate " not in q.command]  # a triage, then an attribution
    folder = tmp_path / "atlas"
    folder.mkdir()
    outputs = iter([fake(TRIAGE_ANSWER), fake(rc=3, output="Error: no environment for TF 2.13.1 in /home/me/asv.json")])
    answers.answer_all(asked[:2], str(folder / answers.FILE), io.StringIO(), run=lambda argv: next(outputs)(argv),
                       clock=iter(range(0, 1000, 65)).__next__)
    atlas.write([], str(folder), groups=grouped)
    html = (folder / atlas.PAGE).read_text()
    assert "2 of their 5 commands run, 1 with an answer, shown below" in html
    assert "(1 of the 2 changes with an answer beside one of their commands, 1 with none)" in html
    assert '<span class="answer">Answer: TF 2.14.0 is the first release' in html and "(1:05 to answer)" in html
    assert "no answer (exit 3, 1:05 to answer): Error: no environment for TF 2.13.1" in html
    assert "/home/me" not in html  # published: no machine's folders
    assert html.count('<code class="cmd">') == 6  # each change's three commands shown, answered or not
    assert "no longer on the map" not in html
    # a nightly triage's commits: the address whole (no machine's folders cut from it) and a link
    kept = json.loads((folder / answers.FILE).read_text())
    url = "https://github.com/tensorflow/tensorflow/compare/75879c752e0...323afda8d60"
    said = f"Answer: TF 2.14.0 is the first. TF commits between a and b: {url}"
    kept["answers"][asked[0].command]["result"]["text"] = said
    (folder / answers.FILE).write_text(json.dumps(kept))
    atlas.write([], str(folder), groups=grouped)
    html = (folder / atlas.PAGE).read_text()
    assert f'<a href="{url}">{url}</a>' in html and "https:/75879c752e0" not in html
    # a column measured since between a change's two ends: its answers stay in the file, the count says so
    kept = json.loads((folder / answers.FILE).read_text())
    kept["answers"]["kerasbench triage --good 2.12.1 --bad 2.16.2 --loop sweep"] = entry(
        "kerasbench triage --good 2.12.1 --bad 2.16.2 --loop sweep", "Answer: x")
    (folder / answers.FILE).write_text(json.dumps(kept))
    atlas.write([], str(folder), groups=grouped)
    html = (folder / atlas.PAGE).read_text()
    assert ("2 of their 5 commands run, 1 with an answer, shown below (1 of the 2 changes with an answer beside one of "
            "their commands, 1 with none); answers.json holds 1 more, of changes no longer on the map (columns "
            "measured since between their two ends)") in html


def test_a_budget_of_minutes_starts_no_command_after_it_and_leaves_the_rest_for_another_call(tmp_path):
    """--answer-minutes 5 (the workflow's nightly budget): commands of 4 minutes each; the second starts at 4:00,
    within the budget, and runs to its end (8:00); the third is not started; a second call goes on."""
    asked = atlas.questions(two_changes())
    path = str(tmp_path / "answers.json")
    ran, now = [], [0.0]

    def four_minutes(argv):
        ran.append(argv)
        now[0] += 240
        return fake(ABLATE_ANSWER if "ablate" in argv else TRIAGE_ANSWER)(argv)

    out = io.StringIO()
    answers.answer_all(asked, path, out, run=four_minutes, clock=lambda: now[0], minutes=5)
    assert len(ran) == 2 and list(json.loads(open(path).read())["answers"]) == [q.command for q in asked[:2]]
    assert (f"the budget of 5 minute(s) is spent (8:00): {len(asked) - 2} of {len(asked)} left for another call "
            "(--answer-minutes)") in out.getvalue()
    answers.answer_all(asked, path, io.StringIO(), run=four_minutes, clock=lambda: now[0], minutes=5)
    assert len(ran) == 4 and ran[2] not in ran[:2]  # the third and fourth, within its own 5 minutes


def test_the_atlas_command_answers_then_writes_the_page_and_its_options_go_together(tmp_path, monkeypatch, capsys):

    from kerasbench.cli import main

    source = tmp_path / "src"
    source.mkdir()
    atlas.write([], str(source), groups=two_changes())
    ran = []
    monkeypatch.setattr(answers, "_run", lambda argv: fake(ABLATE_ANSWER if "ablate" in argv else TRIAGE_ANSWER,
                                                           ran=ran)(argv))
    out = tmp_path / "out"
    # --answer-plan: what it would run, in its order, with the changes each explains; none run, nothing written
    assert main(["atlas", str(source / atlas.DATA), "--output", str(out), "--answer", "--answer-plan",
                 "--answer-limit", "2"]) == 0
    told = capsys.readouterr().out
    assert not ran and not out.exists()
    assert "5 command(s) answer the atlas's changes: 0 answered" in told and "2 to run (3 left for another call" in told
    assert ("[1/2] which cleanup steps it needs there: kerasbench ablate --loop sweep --tf 2.14.1\n    explains 2, "
            "the first answer of a change: sweep × clear_session, TF 2.13.1 → 2.14.1; sweep × clear_session_del_gc")  \
        in told
    assert main(["atlas", str(source / atlas.DATA), "--output", str(out), "--answer-plan"]) == 2
    assert "--answer-plan and --config go with --answer" in capsys.readouterr().err
    code = main(["atlas", str(source / atlas.DATA), "--output", str(out), "--answer", "--answer-limit", "2",
                 "--config", "asv.matrix.json"])
    assert code == 0 and len(ran) == 2 and all(argv[-4:-2] == ["--config", "asv.matrix.json"] for argv in ran)
    assert "5 command(s) answer the atlas's changes: 0 answered" in capsys.readouterr().out
    assert "2 of their 5 commands run, 2 with an answer" in (out / atlas.PAGE).read_text()
    assert main(["atlas", str(source / atlas.DATA), "--output", str(out), "--config", "asv.matrix.json"]) == 2
    assert "--answer-plan and --config go with --answer" in capsys.readouterr().err
    assert main(["atlas", str(source / atlas.DATA), "--output", str(out), "--answer-minutes", "30"]) == 2
    assert "--answer-minutes, --answer-only, --answer-plan and --config go with --answer" in capsys.readouterr().err
    assert main(["atlas", str(source / atlas.DATA), "--output", str(out), "--answer", "--answer-minutes", "0"]) == 2
    assert "answer-minutes" in capsys.readouterr().err


def test_answer_only_asks_the_changes_of_the_columns_named_and_refuses_a_column_the_atlas_lacks(tmp_path, capsys):
    grouped = two_changes()
    assert atlas.questions(grouped, ("2.14.1",)) == atlas.questions(grouped)  # both changes go into 2.14.1
    assert atlas.questions(grouped, ("2.13.1",)) == atlas.questions(grouped)  # … and out of 2.13.1
    with pytest.raises(UsageError, match=r"--answer-only '2\.15\.1' is not a column of this atlas; its columns: "
                                         r"2\.13\.1, 2\.14\.1"):
        atlas.questions(grouped, ("2.15.1",))
    three = groups(*[(v, [record("sweep", "clear_session", *grows)]) for v, grows in
                     (("2.13.1", ()), ("2.14.1", ("grows", "leak", 3500 * KIB)), ("2.15.1", ()))])
    into = atlas.questions(three, ("2.13.1",))  # the change 2.13.1 → 2.14.1 only, not 2.14.1 → 2.15.1
    assert into and all("--good 2.13.1 --bad 2.14.1" in q.command or "--tf 2.14.1" in q.command for q in into)
    assert len(atlas.questions(three)) > len(into)
    from kerasbench.cli import main

    source = tmp_path / "src"
    source.mkdir()
    atlas.write([], str(source), groups=grouped)
    assert main(["atlas", str(source / atlas.DATA), "--output", str(tmp_path / "o"), "--answer-only", "2.14.1"]) == 2
    assert "--answer-plan and --config go with --answer" in capsys.readouterr().err
    assert main(["atlas", str(source / atlas.DATA), "--output", str(tmp_path / "o"), "--answer",
                 "--answer-only", "2.9.9"]) == 2
    assert "--answer-only '2.9.9' is not a column" in capsys.readouterr().err


# ---------------------------------------------------------------- questions as data: names checked, argv rendered


def _questions_of_every_kind():
    """Questions of every command and option the atlas asks: a release change, a Python axis, tf_keras, a backend,
    a shipped report's row, nightlies, and the settling triage."""
    from kerasbench import public

    report = public.LOOP_PREFIX + public.NAMES[0]
    grows = ("grows", "leak", 3600 * KIB)
    g = groups(("2.13.1", [record("sweep", "clear_session_del_gc"), record(report, "reuse_model")]),
               ("2.14.1", [record("sweep", "clear_session_del_gc", *grows), record(report, "reuse_model", *grows)]),
               ("2.21.0", [record("sweep", "clear_session_del_gc")]),
               ("2.21.0+jax", [record("sweep", "clear_session_del_gc", *grows)]),
               ("2.16.2+tf_keras", [record("sweep", "clear_session_del_gc")]),
               ("2.17.1+tf_keras", [record("sweep", "clear_session_del_gc", *grows)]))
    asked = atlas.questions(g)
    asked += [q for q in atlas.commands("kfold", "clear_session", "2.22.0-dev20260615", "2.22.0-dev20260715")]
    asked += [atlas.settle_command(atlas.commands("sweep", "clear_session", "2.13.1+py3.12", "2.14.1+py3.12"))]
    return asked


def test_every_rendered_argv_parses_with_the_real_parser_to_the_questions_fields():
    from kerasbench.cli import build_parser

    asked = _questions_of_every_kind()
    verbs = {(q.verb, bool(q.backends), bool(q.report), bool(q.python), bool(q.profile)) for q in asked}
    assert {v[0] for v in verbs} == {"triage", "attribute", "ablate"} and len(verbs) >= 6, verbs
    parser = build_parser()
    for q in asked:
        args = parser.parse_args(q.argv())  # argparse exits (SystemExit) on an option the command lacks
        assert args.command == q.verb if hasattr(args, "command") else True
        for field, option in (("good", "good"), ("bad", "bad"), ("tf", "tf"), ("strategy", "strategy"),
                              ("python", "python"), ("profile", "profile"), ("keras", "keras"), ("backend", "backend")):
            if getattr(q, field):
                assert getattr(args, option) == getattr(q, field), (q.command, field)
        assert (args.loop or None) == (q.loop or None) and bool(args.repro) == bool(q.report)
        assert q.command == "kerasbench " + " ".join(q.argv())  # validated names need no quoting


@pytest.mark.parametrize("loop, column, problem", [
    ("report:../../../../../../tmp/evil", "2.14.1", "report '../../../../../../tmp/evil'"),
    ("sweep", "2.14.1 --json /tmp/x.json", "release '2.14.1 --json /tmp/x.json'"),
    ("sweep", "2.14.1;rm", "release '2.14.1;rm'"),
    ("report:tf33009_predict --json /tmp/x", "2.14.1", "report 'tf33009_predict --json /tmp/x'"),
])
def test_a_name_from_a_data_file_never_steers_what_runs(tmp_path, capsys, loop, column, problem):
    """An atlas.json, a records file or a nightly record all reach the commands through the same columns and pairs:
    a loop that would point a repro elsewhere, a column label carrying an option or a shell word, is checked against
    the registries before any command is planned: no question asks it, the change says why, --answer-plan plans
    nothing from it."""
    from kerasbench.cli import main

    g = groups(("2.13.1", [record(loop, "reuse_model")]),
               (column, [record(loop, "reuse_model", "grows", "leak", 3600 * KIB)]))
    asked = atlas.questions(g)
    assert all(q.problem() is None for q in asked)
    assert not any("evil" in q.command or "/tmp/x" in q.command or ";" in q.command for q in asked)
    assert not any(q.report and q.report not in __import__("kerasbench.public").public.NAMES for q in asked)
    html = atlas.section(g)
    assert atlas.esc(f"No command answers this change here: {problem} is not one this kerasbench knows") in html
    folder = tmp_path / "inj"
    atlas.write([], str(folder), groups=g)
    assert main(["atlas", str(folder / atlas.DATA), "--output", str(folder), "--answer", "--answer-plan"]) == 0
    told = capsys.readouterr().out
    assert told.startswith("0 command(s) answer the atlas's changes") and "--json" not in told and "evil" not in told


def test_answers_json_has_no_silent_size_cliff(tmp_path, monkeypatch):
    """answers.json is read whole, up to answers.LIMIT (16 MiB, ~20,000 answers: the published one held 1,145 in
    1.2 MB); past WARN_SHARE of it each write says so, and a file past it is one line naming it, not a traceback."""
    asked = atlas.questions(two_changes())
    path = tmp_path / answers.FILE
    answers.answer_all(asked[:1], str(path), io.StringIO(), run=fake("Answer: x"))
    size = path.stat().st_size
    monkeypatch.setattr(answers, "LIMIT", int(size * 1.5))  # the next answer takes the file past 80 % of the limit
    out = io.StringIO()
    answers.answer_all(asked[1:2], str(path), out, run=fake("Answer: y"))
    assert f"{path} is " in out.getvalue() and "MiB an answers file may hold" in out.getvalue()
    monkeypatch.setattr(answers, "LIMIT", size // 2)
    with pytest.raises(UsageError) as e:
        answers.read(str(path))
    assert str(path) in str(e.value) and "\n" not in str(e.value)
