"""kerasbench attribute: which package carries a change; forced installs; Keras as an axis (tf_keras, Keras triage)."""

import json
import os
import sys

import pytest

from kerasbench import attribute, environment, install, releases
from kerasbench.commands import attribute as command  # the session: the sides' pins, the index, the environments
from kerasbench.errors import UsageError

from test_compare import synthetic

from test_triage import KIB, MATRIX, assert_the_file_s_error, call, failed_record, offline_index  # noqa: F401 (autouse)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GOOD = {"tensorflow-cpu": "2.13.1", "keras": "2.13.1", "numpy": "1.24.3", "scipy": "1.15.3",
        "pip+asv_runner": "0.3.2"}
BAD = {"tensorflow-cpu": "2.14.0", "keras": "2.14.0", "numpy": "1.26.4", "scipy": "1.17.1",
       "pip+asv_runner": "0.3.2"}


def record(version, slope, seed=0, keras=None):
    r = synthetic(version, slope, repeats=2, n=20, seed=seed)["records"][0]
    if keras:
        r["environment"]["keras"] = keras
    return r


# ---------------------------------------------------------------- the plan

# what uv says of the 2.13.1 -> 2.14.0 pins: (package, version, its dependency, the versions it accepts)
REQUIRES = [("tensorflow-cpu", "2.14.0", "keras", {"2.14.0"}), ("tensorflow-cpu", "2.13.1", "keras", {"2.13.1"}),
            ("tensorflow-cpu", "2.13.1", "numpy", {"1.24.3"}), ("scipy", "1.17.1", "numpy", {"1.26.4"})]


def fake_resolves(rules=REQUIRES, asked=None):
    """A stand-in for uv: refuses pins where a package's requirement excludes another's pin, in uv's words."""
    def resolves(reqs):
        if asked is not None:
            asked.append(dict(reqs))
        for name, version, dep, accepts in rules:
            if reqs.get(name) == version and dep in reqs and reqs[dep] not in accepts:
                return False, (f"Because {name}=={version} depends on {dep}=={'|'.join(sorted(accepts))} and you "
                               f"require {dep}=={reqs[dep]}, we can conclude that your requirements are unsatisfiable.")
        return True, ""
    return resolves


def test_plan_moves_each_differing_package_alone_into_the_good_environment():
    rows = attribute.plan(GOOD, BAD).rows  # no installer to ask: no groups
    assert [r.label for r in rows[:2]] == ["good", "bad"]
    assert [r.moved for r in rows[2:]] == [("tensorflow-cpu",), ("keras",), ("numpy",), ("scipy",)]
    for row in rows[2:]:
        (name,) = row.moved
        assert row.kind == "single" and row.pins[name] == BAD[name]
        assert {k: v for k, v in row.pins.items() if k != name} == {k: v for k, v in GOOD.items() if k != name}
    with pytest.raises(UsageError, match="Nothing to attribute"):
        attribute.plan(GOOD, dict(GOOD))


def test_plan_adds_the_groups_the_installer_needs_and_leave_one_out_once_per_environment():
    planned = attribute.plan(GOOD, BAD, fake_resolves())
    groups = [r for r in planned.rows if r.kind == "group"]
    # TF needs keras (keras alone needs TF: the same group); numpy needs a newer TF, which needs keras;
    # scipy needs numpy, numpy TF, TF keras: that is the bad end itself, not planned again
    assert [g.moved for g in groups] == [("tensorflow-cpu", "keras"), ("numpy", "tensorflow-cpu", "keras")]
    assert groups[0].label == "good + tensorflow-cpu 2.14.0 + keras 2.14.0"
    assert groups[0].pins == {**GOOD, "tensorflow-cpu": "2.14.0", "keras": "2.14.0"}
    assert "depends on keras" in groups[0].refused
    # the bad end with scipy put back is the numpy group's environment: planned once
    assert groups[1].also == "bad with scipy 1.15.3"
    assert [r.label for r in planned.leave_one_out] == ["bad with tensorflow-cpu 2.13.1", "bad with keras 2.13.1",
                                                       "bad with numpy 1.24.3"]
    assert planned.leave_one_out[1].pins == {**BAD, "keras": "2.13.1"}
    assert planned.count() == 11 and "2 ends + 4 single + 2 group + 3 leave-one-out" in planned.describe()


def test_plan_of_one_and_of_two_coupled_packages_plans_no_environment_twice():
    one = attribute.plan(GOOD, {**GOOD, "numpy": "1.24.4"}, fake_resolves())
    assert [r.label for r in one.rows] == ["good", "bad"] and one.leave_one_out == []  # the move is the bad end
    one.rows[0].cls, one.rows[1].cls = "good", "bad"
    assert attribute.conclude(one.rows, GOOD, one.rows[1].pins, True, "", "sweep").packages == ["numpy"]
    # keras and TF coupled: each alone is refused, together they are the bad end; leave-one-out = the singles
    bad = {**GOOD, "tensorflow-cpu": "2.14.0", "keras": "2.14.0"}
    two = attribute.plan(GOOD, bad, fake_resolves())
    assert [r.kind for r in two.rows] == ["end", "end", "single", "single"] and two.leave_one_out == []
    # three free packages: three singles, three leave-one-out, no groups
    three = attribute.plan({"a": "1", "b": "1", "c": "1"}, {"a": "2", "b": "2", "c": "2"}, fake_resolves([]))
    assert three.count() == 8 and [r.pins for r in three.leave_one_out][0] == {"a": "1", "b": "2", "c": "2"}


def test_group_search_adds_what_the_installer_names_until_it_resolves_and_is_bounded():
    names = attribute.differing(GOOD, BAD)
    asked = []
    assert attribute.group_for("numpy", GOOD, BAD, names, fake_resolves(asked=asked))[0] == \
        ("numpy", "tensorflow-cpu", "keras")
    assert len(asked) == 3  # numpy alone, + TF, + keras
    assert attribute.group_for("keras", GOOD, {**GOOD, "keras": "2.14.0"}, ["keras"], fake_resolves()) == \
        ((), "Because tensorflow-cpu==2.13.1 depends on keras==2.13.1 and you require keras==2.14.0, we can "
             "conclude that your requirements are unsatisfiable.")  # what it needs does not differ: no group
    assert attribute.group_for("scipy", GOOD, BAD, names, fake_resolves([]))[0] == ()  # resolves alone

    def never(reqs):  # an installer that always names the next package: at most len(names) tries
        asked.append(reqs)
        return False, " ".join(f"{n}==1 depends on x" for n in names)

    asked.clear()
    assert attribute.group_for("numpy", GOOD, BAD, names, never)[0] == () and len(asked) <= len(names)


def rows_of(classes, good=GOOD, bad=BAD, resolves=None):
    """The plan's rows (leave-one-out included) with classes given by label, as if measured."""
    planned = attribute.plan(good, bad, resolves or fake_resolves())
    rows = planned.rows + planned.leave_one_out
    for row in rows:
        row.cls = classes.get(row.label, "good" if row.label != "bad" else "bad")
        row.record = {} if row.label in classes or row.kind != "leave-one-out" else None
    return rows


def test_conclusion_carried_by_one_package_even_forced_with_its_group_confirming():
    rows = rows_of({"good + tensorflow-cpu 2.14.0": "bad", "good + tensorflow-cpu 2.14.0 + keras 2.14.0": "bad",
                    "good + numpy 1.26.4 + tensorflow-cpu 2.14.0 + keras 2.14.0": "bad"})
    rows[2].forced = ["keras"]
    found = attribute.conclude(rows, GOOD, BAD, True, "", "sweep")
    assert (found.kind, found.packages) == ("carried", ["tensorflow-cpu"])
    assert found.text.startswith("Answer: carried by tensorflow-cpu 2.14.0: the good environment with it alone")
    assert "forced install" in found.text and "so does the unforced good + tensorflow-cpu 2.14.0 + keras" in found.text
    assert "with keras 2.14.0, numpy 1.26.4, scipy 1.17.1 alone the good environment behaves like the good end" \
        in found.text


def test_conclusion_x_and_y_together_when_only_both_reproduce_it_and_either_returned_cures_it():
    rows = rows_of({"good + tensorflow-cpu 2.14.0 + keras 2.14.0": "bad", "bad with tensorflow-cpu 2.13.1": "good",
                    "bad with keras 2.13.1": "good", "bad with numpy 1.24.3": "bad",
                    "good + numpy 1.26.4 + tensorflow-cpu 2.14.0 + keras 2.14.0": "bad"})
    found = attribute.conclude(rows, GOOD, BAD, True, "", "sweep")
    assert (found.kind, found.packages) == ("together", ["tensorflow-cpu", "keras"])
    assert found.text.startswith("Answer: carried by tensorflow-cpu 2.14.0 and keras 2.14.0 together")


def test_conclusion_with_needs_and_nothing():
    group = "good + tensorflow-cpu 2.14.0 + keras 2.14.0"
    found = attribute.conclude(rows_of({group: "bad"}), GOOD, BAD, True, "", "sweep")  # no leave-one-out measured
    assert (found.kind, found.packages) == ("with", ["tensorflow-cpu", "keras"])
    assert found.text.startswith("Answer: carried by tensorflow-cpu 2.14.0 with keras 2.14.0")
    back = {f"bad with {n} {GOOD[n]}": "bad" for n in ("tensorflow-cpu", "keras", "numpy")}
    back["good + numpy 1.26.4 + tensorflow-cpu 2.14.0 + keras 2.14.0"] = "bad"  # = the bad end with scipy back
    found = attribute.conclude(rows_of({**back, "bad with numpy 1.24.3": "good"}), GOOD, BAD, True, "", "sweep")
    assert (found.kind, found.packages) == ("with", ["numpy", "tensorflow-cpu", "keras"])  # the necessary one leads
    good, bad = {"a": "1", "b": "1", "c": "1"}, {"a": "2", "b": "2", "c": "2"}
    back = {"bad with a 1": "bad", "bad with b 1": "bad", "bad with c 1": "bad"}
    found = attribute.conclude(rows_of({**back, "bad with a 1": "good"}, good, bad, fake_resolves([])), good, bad,
                               True, "", "sweep")
    assert (found.kind, found.packages) == ("needs", ["a"]) and found.text.startswith("Answer: carried by a 2 with")
    found = attribute.conclude(rows_of(back, good, bad, fake_resolves([])), good, bad, True, "", "sweep")
    assert found.kind == "none" and found.text.startswith("Answer: nothing reproduces the change of sweep")
    assert "putting back a 1, b 1 and c 1 (each alone) leaves it like the bad end" in found.text
    assert attribute.conclude(rows_of({}), GOOD, BAD, False, "unchanged", "sweep").kind == "no change"


def test_leave_one_out_is_measured_when_no_single_move_carries_it_or_several_are_partial():
    rows = rows_of({"good + keras 2.14.0": "bad"})
    assert not attribute.needs_leave_one_out(rows)
    assert attribute.needs_leave_one_out(rows_of({}))
    assert attribute.needs_leave_one_out(rows_of({"good + keras 2.14.0": "bad", "good + numpy 1.26.4": "unclear",
                                                  "good + scipy 1.17.1": "unclear"}))


def test_side_pins_of_a_release_an_environment_folder_and_an_unknown_name(tmp_path):
    assert command.side_pins(MATRIX, "2.13.1") == GOOD  # the matrix's own entry
    derived = command.side_pins(MATRIX, "2.14.0")  # a patch release: pins derived from the index
    assert derived["tensorflow-cpu"] == "2.14.0" and derived["keras"] == "2.14.0"
    env = tmp_path / "some-env"
    env.mkdir()
    (env / "asv-env-info.json").write_text(json.dumps({"python": "3.11", "requirements": BAD}))
    assert command.side_pins(MATRIX, str(env)) == BAD
    with pytest.raises(UsageError, match="Expected a TF release"):
        command.side_pins(MATRIX, "no-such-env")


def test_an_attribution_across_distributions_is_refused_before_anything_is_made(capsys, monkeypatch):
    """A release against a nightly pins TF and Keras under other names (tensorflow-cpu, keras; tf-nightly-cpu,
    keras-nightly), as a nightly's CPU build against its full one: a package moved across would be a second copy of
    one module. plan() refuses it, naming both; the command: one line, exit 2, no environment made. Two nightlies of
    one build plan as two releases do."""
    release = {"tensorflow-cpu": "2.21.0", "keras": "3.13.2", "numpy": "2.4.6"}
    nightly = {"tf-nightly-cpu": "2.22.0.dev20260215", "keras-nightly": "3.14.0.dev2026021505", "numpy": "2.4.6"}
    with pytest.raises(attribute.AcrossDistributions, match="the good side pins tensorflow-cpu where the bad one "
                       "pins tf-nightly-cpu, keras where the bad one pins keras-nightly; a package moved"):
        attribute.plan(release, nightly)
    full = {"tf-nightly": "2.23.0.dev20261026", "keras-nightly": "3.16.0.dev2026102704", "numpy": "2.4.6"}
    assert attribute.across_distributions(nightly, full) == [("tf-nightly-cpu", "tf-nightly")]
    later = dict(nightly, **{"tf-nightly-cpu": "2.22.0.dev20260315", "keras-nightly": "3.14.0.dev2026031505"})
    assert attribute.across_distributions(nightly, later) == []
    assert [r.label for r in attribute.plan(nightly, later).rows][:2] == ["good", "bad"]
    made = []
    monkeypatch.setattr(environment, "python_for", lambda *a, **k: made.append(a) or ("python", "env"))
    code, _ = call(["attribute", "--config", MATRIX, "--good", "2.21.0", "--bad", "nightly:2026-09-05", "--loop",
                    "inference", "--strategy", "clear_session"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "Cannot attribute across distributions" in err[0] and not made, err


def test_side_pins_of_a_nightly_as_triage_names_a_bracket_s_end():
    """A nightly triage ends "Not TF's alone …: run `kerasbench attribute --good 2.22.0.dev20260626 --bad
    2.22.0.dev20260627 …`": that command refused a nightly ("Unknown environment"). Its pins are triage's: the
    nightly, the keras-nightly and tb-nightly uploaded before it, the newest entry's others; by day or version."""
    from kerasbench import nightlies

    nightlies._index.cache_clear()  # the offline index (offline_index): this file's tests may have read another
    try:
        by_version = command.side_pins(MATRIX, "2.22.0.dev20260905")
        assert command.side_pins(MATRIX, "nightly:2026-09-05") == by_version
        assert by_version["tf-nightly-cpu"] == "2.22.0.dev20260905" and "tensorflow-cpu" not in by_version
        assert by_version["keras-nightly"].startswith("3.") and "keras" not in by_version
        with pytest.raises(UsageError, match="Unknown TF nightly"):
            command.side_pins(MATRIX, "2.22.0.dev20200101")
    finally:
        nightlies._index.cache_clear()


def test_reproduce_args_name_the_release_and_only_the_pins_it_does_not_have():
    assert command.reproduce_args(MATRIX, GOOD) == ["--tf", "2.13.1"]
    assert command.reproduce_args(MATRIX, attribute.swapped(GOOD, BAD, ["keras"])) == \
        ["--tf", "2.13.1", "--pin=keras==2.14.0"]


def test_reproduce_args_of_a_nightly_environment_are_a_command_run_takes(capsys):
    """A TF nightly's environment (triage's bracket): `--tf <the nightly>` and its other pins; pins without --tf
    (what it printed) are refused by `run`."""
    from kerasbench.cli import build_parser
    from kerasbench.commands import options

    pins = {"tf-nightly-cpu": "2.22.0.dev20260727", "keras-nightly": "3.16.0.dev2026073104", "numpy": "2.4.6",
            "pip+asv_runner": "0.3.2"}
    args = command.reproduce_args(MATRIX, pins)
    assert args == ["--tf", "2.22.0.dev20260727", "--pin=keras-nightly==3.16.0.dev2026073104", "--pin=numpy==2.4.6"]
    parsed = build_parser().parse_args(["run", "--loop", "sweep", *args])
    assert parsed.tf == "2.22.0.dev20260727" and options.parse_pins(parsed.pin) == {
        "keras-nightly": "3.16.0.dev2026073104", "numpy": "2.4.6"}


# ---------------------------------------------------------------- forced installs

FAKE_UV = """#!{python}
import os, sys
argv = sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(" ".join(argv) + "\\n")
if argv[0] == "venv":
    os.makedirs(os.path.join(argv[-1], "bin"))
    os.symlink({python!r}, os.path.join(argv[-1], "bin", "python"))
    os.symlink({python!r}, os.path.join(argv[-1], "bin", "pip"))
    sys.exit(0)
pins = sys.stdin.read().split() if argv[1] == "compile" else [a for a in argv if "==" in a]
if "--no-deps" not in argv and "tensorflow-cpu==2.14.0" in pins and "keras==2.13.1" in pins:
    print("error: No solution found when resolving dependencies")
    print("  cause: Because tensorflow-cpu==2.14.0 depends on keras>=2.14.0,<2.15 and you require "
          "tensorflow-cpu==2.14.0, we can conclude that you require keras>=2.14.0,<2.15.")
    print("         And because you require keras==2.13.1, we can conclude that your requirements are unsatisfiable.")
    sys.exit(1)
if "--no-deps" not in argv and "scipy==1.17.1" in pins and "tensorflow-cpu==2.13.1" in pins:
    print("error: No solution found when resolving dependencies")
    if "numpy==1.24.3" in pins:
        print("  cause: Because scipy==1.17.1 depends on numpy>=1.26.4 and you require numpy==1.24.3, we can "
              "conclude that your requirements and scipy==1.17.1 are incompatible.")
    else:
        print("  cause: Because scipy==1.17.1 depends on numpy>=1.26.4 and tensorflow-cpu==2.13.1 depends on "
              "numpy>=1.22,<=1.24.3, we can conclude that scipy==1.17.1 and tensorflow-cpu==2.13.1 are incompatible.")
    sys.exit(1)
"""


@pytest.fixture
def fake_uv(tmp_path, monkeypatch):
    uv = tmp_path / "bin" / "uv"
    uv.parent.mkdir()
    uv.write_text(FAKE_UV.format(python=sys.executable, log=str(tmp_path / "uv.log")))
    uv.chmod(0o755)
    monkeypatch.setattr(install, "installer", lambda env: str(uv))
    return tmp_path / "uv.log"


def test_forced_pins_are_the_ones_the_installers_reason_names(fake_uv):
    uv = str(fake_uv.parent / "bin" / "uv")
    tf_moved = attribute.swapped(GOOD, BAD, ["tensorflow-cpu"])
    forced, why = install.forced_pins(tf_moved, "3.11", uv)
    assert forced == ["keras"] and "depends on keras>=2.14.0" in why
    assert install.forced_pins(GOOD, "3.11", uv) == ([], "")
    # forcing numpy back does not resolve (TF 2.13.1 and scipy 1.17.1 want different numpys): scipy is forced
    forced, why = install.forced_pins(attribute.swapped(GOOD, BAD, ["scipy"]), "3.11", uv)
    assert forced == ["scipy"] and "scipy==1.17.1 depends on numpy>=1.26.4" in why


def test_an_unresolvable_environment_is_made_forced_and_imported(config, fake_uv, monkeypatch):
    checked = []
    monkeypatch.setattr(install, "import_check", lambda python, reqs, forced=(): checked.append(python) or "")
    pins = attribute.swapped(GOOD, BAD, ["tensorflow-cpu"])
    said = []
    python, name = environment.python_for(config, pins, said.append)
    installs = [line for line in fake_uv.read_text().splitlines() if line.startswith("pip install")]
    assert "keras==2.13.1" in installs[0]  # the first try: everything in one resolve, refused
    assert "keras==2.13.1" not in installs[1] and "tensorflow-cpu==2.14.0" in installs[1]  # TF with its own deps
    assert "--no-deps" in installs[2] and installs[2].endswith("keras==2.13.1")  # then keras forced back
    assert checked == [python]
    note = install.install_note(python)
    assert note["forced"] == ["keras"] and "depends on keras>=2.14.0" in note["why"]
    assert any("forcing keras with --no-deps" in s for s in said)
    assert environment.environment_for(config, pins)[1].check_presence()


def test_a_forced_environment_that_does_not_import_is_one_line_and_leaves_no_folder(config, fake_uv, monkeypatch):
    monkeypatch.setattr(install, "import_check",
                        lambda python, reqs, forced=(): "ImportError: cannot import name 'x'")
    pins = attribute.swapped(GOOD, BAD, ["tensorflow-cpu"])
    with pytest.raises(UsageError, match="does not import: ImportError"):
        environment.python_for(config, pins)
    assert not os.path.exists(environment.environment_for(config, pins)[1]._path)


def test_tf_keras_is_always_installed_without_its_tensorflow_requirement(config, fake_uv, monkeypatch):
    monkeypatch.setattr(install, "import_check", lambda python, reqs, forced=(): "")
    monkeypatch.setattr(releases, "tf_keras_for", lambda tf, python="3.11", doc=None: "2.16.0")
    reqs, no_deps = environment.requirements_with(config, "2.16.2", keras="tf_keras")
    # the form asv.matrix.json pins it in: asv's own pip reads the flag too
    assert reqs["pip+tf-keras"] == "--no-deps 2.16.0" and reqs["keras"] == "3.4.1" and no_deps == ["pip+tf-keras"]
    environment.python_for_tf(config, "2.16.2", keras="tf_keras")
    installs = [line for line in fake_uv.read_text().splitlines() if line.startswith("pip install")]
    assert "tf-keras" not in installs[0] and installs[1].endswith("tf-keras==2.16.0") and "--no-deps" in installs[1]
    with pytest.raises(UsageError, match="TF 2.16 and later"):
        environment.requirements_with(config, "2.15.1", keras="tf_keras")


def test_tf_keras_for_is_the_newest_of_the_tf_minor():
    doc = {"files": [{"filename": f"tf_keras-{v}-py3-none-any.whl", "upload-time": "2024"}
                     for v in ("2.15.0", "2.16.0", "2.17.0", "2.17.1")]}
    assert releases.tf_keras_for("2.17.1", doc=doc) == "2.17.1"
    assert releases.tf_keras_for("2.16.2", doc=doc) == "2.16.0"
    with pytest.raises(UsageError, match="No tf-keras 2.21.x"):
        releases.tf_keras_for("2.21.0", doc=doc)


def test_keras_versions_between_two_releases():
    versions = releases.package_versions("keras", "3.4.1", "3.6.0")
    assert versions == ["3.4.1", "3.5.0", "3.6.0"]
    assert releases.package_versions("keras", "3.6.0", "3.4.1") == versions[::-1]
    with pytest.raises(UsageError, match="Unknown keras version"):
        releases.package_versions("keras", "3.4.1", "9.9.9")


# ---------------------------------------------------------------- the command on fakes


def fake_environments(monkeypatch, carrier, forced=(), refuses=lambda pins: ""):
    """python_for and measure_at_once fakes: environments that grow are the ones with the bad side's `carrier` pin
    (a name; or a predicate on the pins; None: none grows); `refuses(pins)` says why one does not install ('':
    it does); `resolver` is fake_resolves (no uv asked)."""
    from kerasbench import runner

    made = {}
    grows = carrier if callable(carrier) else (lambda pins: carrier is not None and pins.get(carrier) == BAD[carrier])

    def python_for(config, reqs, progress=None, python=None):
        if refuses(reqs):
            raise UsageError(refuses(reqs))
        path = f"python-{len(made)}"
        made[path] = dict(reqs)
        return path, f"env-{len(made)}"

    def measure_at_once(specs, jobs, progress, finished, repro_raises=True):
        out = []
        for i, spec in enumerate(specs):
            pins = made[spec.python]
            r = record(pins["tensorflow-cpu"], 2400 * KIB if grows(pins) else 0, seed=len(made) * 10 + i,
                       keras=pins["keras"])
            r["spec"]["python"] = spec.python
            out.append(r)
        return out

    monkeypatch.setattr(environment, "python_for", python_for)
    monkeypatch.setattr(environment, "install_note",
                        lambda python: {"forced": ["keras"], "why": "tensorflow-cpu==2.14.0 depends on keras"}
                        if made[python].get("tensorflow-cpu") == "2.14.0" and made[python]["keras"] == "2.13.1"
                        and forced else {})
    monkeypatch.setattr(runner, "measure_at_once", measure_at_once)
    monkeypatch.setattr(command, "resolver", lambda config, pins, python=None: fake_resolves())
    return made


ATTRIBUTE = ["attribute", "--config", MATRIX, "--good", "2.13.1", "--bad", "2.14.0", "--loop", "sweep",
             "--strategy", "clear_session_del_gc"]


def row_of(out, label):
    """The evidence table's line of an environment."""
    return next(line for line in out.splitlines() if line.startswith(label + "  "))


@pytest.mark.parametrize("carrier", ["keras", "tensorflow-cpu"])
def test_attribute_names_the_package_whose_swap_behaves_like_the_bad_end(monkeypatch, tmp_path, capsys, carrier):
    made = fake_environments(monkeypatch, carrier, forced=True)
    out_json = tmp_path / "attr.json"
    code, out = call(ATTRIBUTE + ["--json", str(out_json)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "plan: 2 ends + 4 single + 2 group + 3 leave-one-out" in err
    assert len(made) == 8  # the two ends, four one-package moves, two groups; no leave-one-out
    assert out.startswith(f"Answer: carried by {carrier} {BAD[carrier]}: the good environment with it alone")
    others = [n for n in ("tensorflow-cpu", "keras", "numpy", "scipy") if n != carrier]
    assert all(f"{n} {BAD[n]}" in out.splitlines()[0] for n in others)  # named as behaving like the good end
    assert row_of(out, f"good + {carrier} {BAD[carrier]}").split()[-1] == "bad"
    assert "forced: keras --no-deps" in row_of(out, "good + tensorflow-cpu 2.14.0")
    group = row_of(out, "good + tensorflow-cpu 2.14.0 + keras 2.14.0")
    assert " group " in group and "resolved" in group and group.split()[-1] == "bad"
    if carrier == "tensorflow-cpu":
        assert "so does the unforced good + tensorflow-cpu 2.14.0 + keras 2.14.0" in out.splitlines()[0]
    assert "Forced installs" in out and "Groups (" in out and "depends on keras" in out
    assert "good + keras 2.14.0: kerasbench run" in out and "--tf 2.13.1 --pin=keras==2.14.0" in out
    assert "--tf 2.14.0 --pin=numpy==1.24.3 --pin=scipy==1.15.3\n" in out  # the group's command
    saved = json.loads(out_json.read_text())
    assert len(saved["records"]) == 8
    classes = {r["label"]: (r["kind"], r["class"]) for r in saved["attribution"]["rows"]}
    assert classes[f"good + {carrier} {BAD[carrier]}"] == ("single", "bad") and classes["good"] == ("end", "good")
    assert classes["good + tensorflow-cpu 2.14.0 + keras 2.14.0"][0] == "group"
    assert saved["attribution"]["conclusion"]["kind"] == "carried"
    assert saved["attribution"]["conclusion"]["packages"] == [carrier]


def test_attribute_measures_leave_one_out_and_says_together(monkeypatch, capsys, tmp_path):
    # the change needs TF and keras at 2.14.0 together: TF forced alone is flat, so is keras alone
    made = fake_environments(monkeypatch, lambda p: p["tensorflow-cpu"] == "2.14.0" and p["keras"] == "2.14.0")
    out_json = tmp_path / "attr.json"
    code, out = call(ATTRIBUTE + ["--json", str(out_json)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert len(made) == 11 and "3 leave-one-out environment(s)" in err
    assert out.startswith("Answer: carried by tensorflow-cpu 2.14.0 and keras 2.14.0 together")
    assert row_of(out, "bad with keras 2.13.1").split()[-1] == "good"
    assert row_of(out, "bad with numpy 1.24.3").split()[-1] == "bad"
    assert "leave-one-out" in row_of(out, "bad with numpy 1.24.3")
    assert row_of(out, "good + numpy 1.26.4 + tensorflow-cpu 2.14.0 + keras 2.14.0").endswith("= bad with scipy 1.15.3")
    assert "bad with keras 2.13.1: kerasbench run" in out and "--tf 2.14.0 --pin=keras==2.13.1" in out
    conclusion = json.loads(out_json.read_text())["attribution"]["conclusion"]
    assert (conclusion["kind"], conclusion["packages"]) == ("together", ["tensorflow-cpu", "keras"])


def test_attribute_when_only_the_whole_bad_environment_grows(monkeypatch, capsys):
    fake_environments(monkeypatch, None)  # only the bad end itself (all its pins) grows
    from kerasbench import runner

    inner = runner.measure_at_once

    def at_once(specs, jobs, progress, finished, repro_raises=True):
        out = inner(specs, jobs, progress, finished)
        if len(specs) > 3:  # the first batch: the ends first
            out[1] = record("2.14.0", 2400 * KIB, seed=9)
            out[1]["spec"]["python"] = specs[1].python
        return out

    monkeypatch.setattr(runner, "measure_at_once", at_once)
    code, out = call(ATTRIBUTE)
    assert code == 0
    # every single move and group is flat, and so is every return (scipy's is the numpy group)
    assert out.startswith("Answer: carried by tensorflow-cpu 2.14.0, keras 2.14.0, numpy 1.26.4 and scipy 1.17.1 "
                          "together: none moved alone reproduces the change")


@pytest.mark.parametrize("at_end", [False, True])
def test_a_repro_that_raises_in_a_step_s_mix_is_that_step_s_failure_and_at_an_end_the_file_s(monkeypatch, capsys,
                                                                                             at_end):
    """tf33009's repro under TF 2.12.1 with keras 2.13.1 raised (a keras the TF does not know): the attribution
    ended with exit 2 as if the file were broken. A step's mix that fails is like neither end and the attribution
    goes on; in a release's own environment (an end) the failure is the file's: one line naming it, exit 2."""
    made = fake_environments(monkeypatch, "tensorflow-cpu")
    from kerasbench import runner

    inner = runner.measure_at_once
    error = "TypeError: VariableMetaclass._variable_v1_call() got an unexpected keyword argument 'lifting'"

    def at_once(specs, jobs, progress, finished, repro_raises=True):
        assert not repro_raises  # attribute measures each step to its end
        out = inner(specs, jobs, progress, finished)
        for i, spec in enumerate(specs):
            pins = made[spec.python]
            mixed = pins["tensorflow-cpu"] == GOOD["tensorflow-cpu"] and pins["keras"] == BAD["keras"]
            if mixed or (at_end and pins == GOOD):
                out[i] = failed_record(spec, error)
        return out

    monkeypatch.setattr(runner, "measure_at_once", at_once)
    repro = os.path.join(ROOT, "kerasbench", "examples", "reports", "tf33009_predict.py")
    argv = [a for a in ATTRIBUTE if a not in ("--loop", "sweep", "--strategy", "clear_session_del_gc")]
    code, out = call(argv + ["--repro", repro, "--strategy", "reuse_model"])
    err = capsys.readouterr().err
    if at_end:
        return assert_the_file_s_error(code, out, err, repro, error)
    assert code == 0, err
    assert out.startswith("Answer: carried by tensorflow-cpu 2.14.0"), out
    assert "with keras 2.14.0 alone it fails to run (its row says why)" in out.splitlines()[0]
    assert f"attribute: good + keras 2.14.0: like neither end: failed: worker exited with code 1: {error}" in err


@pytest.mark.parametrize("limit, message", [
    ("0", "Invalid value for argument `max_envs`. Received: max_envs=0. Expected 3 or more"),
    ("9", "attribute needs 10 environments (2 ends + 4 single + 4 leave-one-out, before any group), more than "
          "--max-envs 9: give --max-envs 10"),
    ("10", "attribute needs 11 environments (2 ends + 4 single + 2 group + 3 leave-one-out"),
])
def test_max_envs_stops_before_anything_is_made(monkeypatch, capsys, limit, message):
    made = fake_environments(monkeypatch, "keras")
    code, out = call(ATTRIBUTE + ["--max-envs", limit])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert made == {} and out == ""


def test_attribute_ends_that_do_not_differ_give_no_answer(monkeypatch, capsys):
    fake_environments(monkeypatch, None)
    code, out = call(ATTRIBUTE)
    assert code == 0 and out.startswith("No answer for sweep × clear_session_del_gc") and "do not differ" in out


@pytest.mark.parametrize("argv, message", [
    (["attribute", "--good", "2.13.1", "--bad", "2.13.1", "--loop", "sweep"], "same"),
    (["attribute", "--good", "2.13.1", "--bad", "2.14.0"], "What to measure"),
    (["run", "--loop", "control", "--pin", "keras==3.4.1"], "give --tf"),
    (["run", "--loop", "control", "--tf", "2.16.2", "--pin", "keras>=3"], "Expected NAME==VERSION"),
    (["triage", "--good", "3.4.1", "--bad", "3.13.2", "--package", "keras", "--loop", "sweep"], "give --tf"),
    (["triage", "--good", "2.13.1", "--bad", "2.14.0", "--tf", "2.21.0", "--loop", "sweep"], "--package keras"),
])
def test_usage_errors_are_one_line(argv, message, capsys):
    code, _ = call(argv + ["--config", MATRIX])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_triage_package_keras_bisects_keras_releases_at_one_tf(monkeypatch, capsys, tmp_path):
    from kerasbench import runner

    made = []

    def python_for(config, reqs, progress=None, python=None):
        made.append(dict(reqs))
        return f"python-{reqs['keras']}", f"env-{reqs['keras']}"

    def measure(spec, progress=None):
        keras = spec.python.split("-", 1)[1]
        slope = 3600 * KIB if releases.version_key(keras) >= (3, 6) else 0
        return record("2.21.0", slope, seed=len(made), keras=keras)

    def at_once(specs, jobs, progress, finished, repro_raises=True):
        return [measure(s) for s in specs]

    monkeypatch.setattr(environment, "python_for", python_for)
    monkeypatch.setattr(runner, "measure", measure)
    monkeypatch.setattr(runner, "measure_at_once", at_once)
    code, out = call(["triage", "--config", MATRIX, "--package", "keras", "--tf", "2.21.0", "--good", "3.4.1",
                      "--bad", "3.13.2", "--loop", "sweep", "--strategy", "clear_session_del_gc", "--attribute"])
    assert code == 0, capsys.readouterr().err
    assert "Answer: Keras 3.6.0 is the first release" in out and "the last like 3.4.1 is 3.5.0" in out
    assert {r["tensorflow-cpu"] for r in made} == {"2.21.0"}
    assert "--tf 2.21.0 --keras 3.6.0" in out
    assert "attribute: 3.5.0 (good) vs 3.6.0 (bad)" in out
    assert "Answer: carried by keras 3.6.0, the only package that differs" in out
    # a plan larger than --max-envs: triage's answer and records stand, the attribution says why it did not run
    saved = tmp_path / "t.json"
    code, out = call(["triage", "--config", MATRIX, "--package", "keras", "--tf", "2.21.0", "--good", "3.4.1",
                      "--bad", "3.13.2", "--loop", "sweep", "--strategy", "clear_session_del_gc", "--attribute",
                      "--max-envs", "1", "--json", str(saved)])
    assert code == 0 and "Answer: Keras 3.6.0 is the first release" in out
    assert "attribute: not run: attribute needs 3 environments" in out and "give --max-envs 3" in out
    assert json.loads(saved.read_text())["triage"] and "attribution" not in json.loads(saved.read_text())


# ---------------------------------------------------------------- tf_keras as a side in compare


def test_compare_labels_tf_keras_records_as_their_own_side(tmp_path):
    from kerasbench.loading import load_records

    keras3 = synthetic("2.16.2", 0, seed=1)
    legacy = synthetic("2.16.2", 0, seed=2)
    legacy["records"][0]["environment"]["keras_package"] = "tf_keras"
    paths = []
    for name, payload in (("k3.json", keras3), ("legacy.json", legacy)):
        (tmp_path / name).write_text(json.dumps(payload))
        paths.append(str(tmp_path / name))
    assert sorted(version for _, _, version in load_records(paths)) == ["2.16.2", "2.16.2+tf_keras"]


def test_compat_reads_tf_keras_as_the_keras_that_ran(monkeypatch):
    """Under TF_USE_LEGACY_KERAS=1 tf.keras is tf_keras's API module: its package's version, not Keras 3's."""
    import types

    from kerasbench import _compat

    legacy = types.ModuleType("tf_keras.api._v2.keras")  # what tf.keras is then (no __version__ of its own)
    package = types.ModuleType("tf_keras")
    package.__version__ = "2.16.0"
    keras3 = types.ModuleType("keras")
    keras3.__version__ = "3.4.1"
    monkeypatch.setitem(sys.modules, "tf_keras", package)
    monkeypatch.setitem(sys.modules, "keras", keras3)
    monkeypatch.setattr(_compat, "keras", lambda: legacy)
    assert (_compat.keras_version(), _compat.keras_package()) == ("2.16.0", "tf_keras")
    monkeypatch.setattr(_compat, "keras", lambda: types.ModuleType("keras._tf_keras.keras"))
    assert (_compat.keras_version(), _compat.keras_package()) == ("3.4.1", "keras")


# ---------------------------------------------------------------- across the Keras 2 -> 3 switch

K2 = {"tensorflow-cpu": "2.15.1", "keras": "2.15.0", "numpy": "1.26.4", "scipy": "1.15.3", "pip+asv_runner": "0.3.2"}
K3 = {"tensorflow-cpu": "2.16.1", "keras": "3.3.3", "numpy": "1.26.4", "scipy": "1.15.3", "pip+asv_runner": "0.3.2"}


def test_across_the_keras_3_switch_the_keras_3_end_is_tried_with_tf_keras(monkeypatch):
    monkeypatch.setattr(releases, "tf_keras_for", lambda tf, python="3.11", doc=None: "2.16.0")
    [bridge] = command.bridges(MATRIX, K2, K3)  # the other bridge has the same pins here: planned once
    assert bridge.label == "bad with tf_keras 2.16.0" and bridge.kind == "bridge"
    assert bridge.pins == {**K3, "pip+tf-keras": "--no-deps 2.16.0"}
    k2_numpy = {**K2, "numpy": "1.24.3"}
    first, second = command.bridges(MATRIX, k2_numpy, K3)
    assert second.label == "good with tensorflow-cpu 2.16.1 and tf_keras 2.16.0"
    assert second.pins == {**K3, "numpy": "1.24.3", "pip+tf-keras": "--no-deps 2.16.0"}  # the Keras 2 end's numpy
    assert command.bridges(MATRIX, K3, {**K3, "numpy": "2.0.2"}) == []  # one Keras major: no bridge
    assert [r.label for r in command.bridges(MATRIX, K3, K2)] == ["good with tf_keras 2.16.0"]  # a fix: either way


def _bridged(monkeypatch, carried_by_keras3):
    """attribute 2.15.1 -> 2.16.1 on fakes: single moves do not install (TF 2.16 needs Keras 3, TF 2.15's tf.keras
    cannot import it); the environments that grow are Keras 3 ones (carried_by_keras3) or TF 2.16 ones."""
    monkeypatch.setattr(releases, "tf_keras_for", lambda tf, python="3.11", doc=None: "2.16.0")
    monkeypatch.setattr(command, "side_pins", lambda config, side, python=None: dict(K2 if side == "2.15.1" else K3))

    def keras2(pins):
        return "pip+tf-keras" in pins or attribute.keras_major(pins) == 2

    def refuses(pins):
        if keras2(pins) and pins["tensorflow-cpu"] == "2.16.1" and "pip+tf-keras" not in pins:
            return "the environment does not import: TF 2.16 needs Keras 3"
        if not keras2(pins) and pins["tensorflow-cpu"] == "2.15.1":
            return "the environment does not import: TF 2.15's tf.keras cannot import Keras 3"
        return ""

    grows = (lambda pins: not keras2(pins)) if carried_by_keras3 else (lambda pins: pins["tensorflow-cpu"] == "2.16.1")
    fake_environments(monkeypatch, grows, refuses=refuses)
    return call(["attribute", "--config", MATRIX, "--good", "2.15.1", "--bad", "2.16.1", "--loop", "inference",
                 "--strategy", "reuse_model"])


def test_a_change_keras_3_carries_is_said_so(monkeypatch):
    code, out = _bridged(monkeypatch, carried_by_keras3=True)
    assert code == 0, out
    assert "Answer: carried by Keras 3 (keras 3.3.3): bad with tf_keras 2.16.0 behaves like the good end" in out
    assert "1 Keras 2 bridge" in out or "bridge" in row_of(out, "bad with tf_keras 2.16.0")


def test_the_keras_3_answer_says_where_the_bridge_lies_on_the_change():
    """The bridge's class and its place on the change (triage.classify's why) make the answer: a bridge 3 % of the
    way is the good end's ('carried by Keras 3'), one halfway is 'not decided', saying where it lies."""
    from kerasbench import rule

    def answer(position, noise):
        bridge = attribute.Row("bad with tf_keras 2.16.0", {**K3, "pip+tf-keras": "--no-deps 2.16.0"}, ("keras",),
                               "bridge")
        where = rule.place((0.0, 1.0), (100.0, 1.0), (position, noise))
        bridge.cls = {"good": "good", "bad": "bad"}.get(where.kind, "unclear")
        bridge.reason, bridge.record = where.text(), {}
        return attribute.conclude([attribute.Row("good", K2), attribute.Row("bad", K3), bridge], K2, K3, True, "",
                                  "repro × reuse_model (peak_over_setup)")

    found = answer(-3.2, 0.25)
    assert (found.kind, found.text) == ("keras 3", "Answer: carried by Keras 3 (keras 3.3.3): bad with tf_keras 2.16.0 "
                                        "behaves like the good end (-3 % of the way to the bad end, ±2 %) in repro "
                                        "× reuse_model (peak_over_setup), so with Keras 2 in its place the change is "
                                        "gone.")
    found = answer(50, 1)
    assert found.kind == "none" and found.text == (
        "Answer: not decided across the Keras 3 switch in repro × reuse_model (peak_over_setup): bad with tf_keras "
        "2.16.0 behaves between the good end and the bad end (50 % of the way, ±2 %).")


def test_a_change_tensorflow_carries_is_said_so(monkeypatch):
    code, out = _bridged(monkeypatch, carried_by_keras3=False)
    assert code == 0, out
    assert "Answer: carried by TensorFlow, not Keras 3: bad with tf_keras 2.16.0 (Keras 2 in Keras 3's place) still " \
           "behaves like the bad end" in out


def test_a_forced_package_is_imported_by_its_module_name():
    # a nightly whose tb-nightly was bumped the day it was built: tb-nightly forced, and checked as tensorboard
    assert [install.module_of(p) for p in ("tensorflow-cpu", "tf-nightly-cpu", "tf-nightly", "tf-keras",
                                               "keras-nightly", "tb-nightly", "scipy")] == [
        "tensorflow", "tensorflow", "tensorflow", "tf_keras", "keras", "tensorboard", "scipy"]
