"""`kerasbench ablate`: cleanup steps composed as data, measured in fresh workers, judged necessary / sufficient.

The control loop keeps a numpy buffer of known size per iteration; fake cleanup steps of known effect (drop every
buffer, halve the newest, do nothing) are registered in the workers through a sitecustomize module on PYTHONPATH
and in this process by monkeypatch, so the answer is known before anything runs.
"""

import io
import json
import textwrap

import pytest

from kerasbench import ablate, cli
from kerasbench.errors import UsageError
from kerasbench.strategies import CLEANUPS, STRATEGIES, compose, get_strategy, split
from kerasbench.units import KIB
from kerasbench.rule import spec_floors

LEAK_KIB = 1024
FAKES = textwrap.dedent("""
    from kerasbench.strategies import CLEANUPS, Cleanup

    def release(pair):
        pair.loop.kept.clear()

    def halve(pair):
        if pair.loop.kept:  # empty after fake_release
            pair.loop.kept[-1] = pair.loop.kept[-1][: len(pair.loop.kept[-1]) // 2].copy()

    FAKES = {
        "fake_release": Cleanup("fake_release", "drop every leaked buffer", release),
        "fake_halve": Cleanup("fake_halve", "keep half of the newest buffer", halve),
        "fake_noop": Cleanup("fake_noop", "nothing", lambda pair: None),
    }
    CLEANUPS.update(FAKES)
""")


@pytest.fixture
def fake_steps(tmp_path, monkeypatch):
    """The fake steps, known to this process and (through sitecustomize) to every worker it starts."""
    (tmp_path / "kb_fake_steps.py").write_text(FAKES)
    (tmp_path / "sitecustomize.py").write_text("import kb_fake_steps  # noqa: F401\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    namespace: dict = {}
    exec(compile(FAKES.replace("CLEANUPS.update(FAKES)", ""), "fakes", "exec"), namespace)
    for name, step in namespace["FAKES"].items():
        monkeypatch.setitem(CLEANUPS, name, step)
    return list(namespace["FAKES"])


# ---------------------------------------------------------------- composition (no worker)


def test_a_composition_is_its_base_plus_the_steps():
    name = compose("rebuild_no_clear", ["del_model", "clear_kernel_cache", "malloc_trim"])
    strategy = get_strategy(name)
    base = STRATEGIES["rebuild_no_clear"]
    assert split(name) == ("rebuild_no_clear", ("del_model", "clear_kernel_cache", "malloc_trim"))
    assert strategy.cleanup == ("del_model", "clear_kernel_cache", "malloc_trim")
    assert strategy.needs == ("clear_kernel_cache", "tensorflow", "malloc_trim")  # the steps' needs (CLEANUPS)
    assert (strategy.model, strategy.applies_to) == (base.model, base.applies_to)
    assert name not in STRATEGIES  # data, not a registry entry
    assert compose("rebuild_no_clear", []) == "rebuild_no_clear"


def test_the_usual_advice_composed_is_the_registry_strategy():
    composed = get_strategy(compose("rebuild_no_clear", ["del_model", "clear_session", "gc_collect"]))
    assert composed.cleanup == STRATEGIES["clear_session_del_gc"].cleanup


@pytest.mark.parametrize("name,words", [
    ("rebuild_no_clear+fooo", ["cleanup step", "'fooo'", "gc_collect", "malloc_trim"]),
    ("rebuild_no_clear+gc_collect+gc_collect", ["twice"]),
    ("no_such+gc_collect", ["Unknown strategy", "rebuild_no_clear"]),
])
def test_bad_compositions_are_one_line_errors(name, words):
    with pytest.raises(UsageError) as e:
        get_strategy(name)
    assert "\n" not in str(e.value) and all(w in str(e.value) for w in words), str(e.value)


def test_the_variants_of_six_steps():
    steps = ablate.check_steps(list(reversed(list(CLEANUPS))))  # any order in, registry order out
    assert steps == tuple(CLEANUPS)
    found = ablate.variants(steps)
    assert [v.kind for v in found].count("alone") == [v.kind for v in found].count("without") == len(steps)
    assert len({v.strategy for v in found}) == len(found) == 2 + 2 * len(steps)
    full = next(v for v in found if v.kind == "full")
    assert get_strategy(full.strategy).cleanup == steps
    for v in found:
        if v.kind == "without":
            assert set(get_strategy(v.strategy).cleanup) == set(steps) - {v.step}
    assert len(ablate.pairs("sweep", steps[:2])) == 4  # two steps: full = none's complement, no duplicates


@pytest.mark.parametrize("argv,words", [
    (["--loop", "swep"], ["Unknown loop", "sweep"]),
    (["--loop", "sweep", "--steps", "gc,del_model"], ["Unknown cleanup step", "'gc'", "gc_collect"]),
    (["--loop", "batch_stream"], ["does not apply", "sweep", "inference"]),
    (["--loop", "sweep", "--steps", "gc_collect"], ["two or more", "malloc_trim"]),
    (["--loop", "sweep", "--base", "clear_session_del_gc"], ["already runs", "rebuild_no_clear"]),
    (["--loop", "sweep", "--iterations", "0"], ["iterations"]),
])
def test_usage_errors_exit_2_on_one_line(argv, words, capsys):
    assert cli.main(["ablate"] + argv, out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and all(w in err for w in words), err


# ---------------------------------------------------------------- fake steps of known effect, in real workers


def test_fake_steps_necessary_and_sufficient(fake_steps, tmp_path, capsys):
    out, path, html = io.StringIO(), tmp_path / "abl.json", tmp_path / "abl.html"
    code = cli.main(["ablate", "--loop", "control", "--base", "control_leak_native", "--steps", ",".join(fake_steps),
                     "--iterations", "12", "--warmup", "1", "--leak-kib", str(LEAK_KIB), "--json", str(path)], out=out)
    assert code == 0, capsys.readouterr().err
    records = json.loads(path.read_text())["records"]
    assert len(records) == 2 + 2 * 3 and all(r["status"] == "ok" for r in records)
    result = ablate.analyse(records, "control", ablate.check_steps(fake_steps), "control_leak_native")
    slopes = {row["variant"]: row["slope"] / KIB for row in result["rows"]}
    verdicts = {row["variant"]: row["verdict"] for row in result["rows"]}
    assert slopes["no cleanup"] == pytest.approx(LEAK_KIB, rel=0.1)
    assert slopes["only fake_halve"] == pytest.approx(LEAK_KIB / 2, rel=0.1)
    assert slopes["all but fake_release"] == pytest.approx(LEAK_KIB / 2, rel=0.1)
    assert verdicts["full cleanup"] == verdicts["only fake_release"] == verdicts["all but fake_noop"] == "flat"
    steps = {p["step"]: p for p in result["per_step"]}
    assert (steps["fake_release"]["necessary"], steps["fake_release"]["sufficient"]) == ("necessary", "sufficient")
    assert (steps["fake_halve"]["necessary"], steps["fake_halve"]["sufficient"]) == ("not necessary",
                                                                                     "not sufficient")
    assert (steps["fake_noop"]["necessary"], steps["fake_noop"]["sufficient"]) == ("not necessary", "not sufficient")
    assert steps["fake_halve"]["alone_vs_none"] == "improved" and steps["fake_noop"]["alone_vs_none"] == "unchanged"
    text = out.getvalue()
    assert "necessary: fake_release; not necessary: fake_halve, fake_noop" in text
    assert "sufficient: fake_release; not sufficient: fake_halve, fake_noop" in text
    assert "wall " in text and "load average" in text
    assert ablate.find(records) == [("control", "control_leak_native", ablate.check_steps(fake_steps))]
    payload = json.loads(path.read_text())  # the control never imports TF: give its records a version to report
    for r in payload["records"]:
        r["environment"]["tensorflow"] = "2.99.0"
    path.write_text(json.dumps(payload))
    assert cli.main(["report", str(path), "--output", str(html)], out=io.StringIO()) == 0
    page = html.read_text()
    assert page.count('<section class="ablation"') == 1 and "all but fake_release" in page
    err = capsys.readouterr().err
    assert "[1/8] control × control_leak_native" in err and "[8/8]" in err  # progress, one line per variant


def test_find_an_interrupted_ablation_but_not_a_lone_composition():
    steps = ("del_model", "clear_session", "gc_collect")
    names = [v.strategy for v in ablate.variants(steps)]
    records = [{"loop": "sweep", "strategy": name} for name in names]
    assert ablate.find(records) == [("sweep", "rebuild_no_clear", steps)]
    assert ablate.find(records[:4]) == ablate.find(records)  # none, full and two alone: the rest shown n/a
    assert ablate.find(records[:3]) == []  # the full cleanup and one other: a composed strategy `run` measured
    assert ablate.find([{"loop": "sweep", "strategy": "clear_session_del_gc"}]) == []


def test_analysis_without_records_is_all_na():
    result = ablate.analyse([], "sweep", ("gc_collect", "malloc_trim"))
    assert {row["verdict"] for row in result["rows"]} == {"n/a"}
    assert {p["necessary"] for p in result["per_step"]} == {"n/a"}
    assert "n/a: gc_collect, malloc_trim" in ablate.text(result)


# ---------------------------------------------------------------- the heap beside RSS (synthetic records)


def _record(strategy, rss_kib, heap_kib, n=30, repeats=2, floor_kib=64):
    """A record whose RSS and heap series grow by known KiB per iteration (RSS noisy, heap quiet)."""
    import numpy as np

    from kerasbench import summary
    from kerasbench.runner import RunSpec

    rng = np.random.default_rng(len(strategy))
    reps = []
    for r in range(repeats):
        rss = [int(500 * 2**20 + rss_kib * KIB * i + rng.normal(0, 16 * KIB)) for i in range(n)]
        heap = [int(80 * 2**20 + heap_kib * KIB * i + rng.normal(0, 256)) for i in range(n)]
        series = {"rss": rss, "heap": heap, "seconds": [0.1] * n, "train_traces": [0] * n,
                  "predict_traces": [0] * n, "function_traces": [0] * n}
        result = {"iterations_done": n, "series": series, "baseline_rss": rss[0], "final_rss": rss[-1],
                  "peak_loop_rss": max(rss), "peak_method": "vmhwm", "loop_seconds": 0.1 * n,
                  "objects_before": 0, "objects_after": 0, "train_traces": 0, "predict_traces": 0,
                  "function_traces": 0, "models_built": n,
                  "graph_build_seconds": None, "tf_alloc_peak": None, "child_peaks": [], "py_blocks_before": 1000,
                  "py_blocks_after": 1000, "heap_baseline": heap[0], "heap_final": heap[0], "heap_peak": max(heap),
                  "heap_source": "fake", "heap_unavailable": None}
        reps.append({"repeat": r, "status": "ok", "reason": None, "result": result, "environment": None})
    spec = RunSpec("inference", strategy, iterations=n, warmup=5, repeats=repeats, floor=floor_kib * KIB,
                   floor_source="given")
    return summary.make_record(spec, reps, spec_floors(spec))


def test_a_step_whose_heap_grows_under_flat_rss_is_not_sufficient_but_necessary():
    # TF 2.21.0 inference over 8 iterations: gc_collect alone read flat RSS while its heap grew +145 KiB per model
    # (glibc's free pages absorbed it; RSS followed from about the 14th); clear_session alone left TF's +3 KiB.
    steps = ("clear_session", "gc_collect")
    base = "rebuild_no_clear"
    records = [_record(base, 230, 230), _record(compose(base, steps), 0, 3),
               _record(compose(base, ["clear_session"]), 0, 3), _record(compose(base, ["gc_collect"]), 0, 145)]
    assert [r["summary"]["verdict"] for r in records] == ["grows", "flat", "flat", "flat"]  # what RSS alone says
    result = ablate.analyse(records, "inference", steps, base)
    by_step = {p["step"]: p for p in result["per_step"]}
    assert by_step["clear_session"]["sufficient"] == "sufficient"
    assert by_step["gc_collect"]["sufficient"] == "not sufficient"
    assert "heap grows +145 KiB/iter" in by_step["gc_collect"]["sufficient_why"]
    assert by_step["clear_session"]["necessary"] == "necessary"  # all but it (gc alone): RSS equal, the heap not
    assert by_step["gc_collect"]["necessary"] == "not necessary"  # all but it (clear_session alone): the same heap
    text = ablate.text(result)
    assert "heap KiB/iter" in text and "+145" in text
    assert "gc_collect not sufficient: RSS flat, but the heap grows" in text
    # RSS that cannot tell (noisy) does not hide a heap that grows either
    records[3] = _record(compose(base, ["gc_collect"]), 40, 145)
    records[3]["summary"]["verdict"] = "inconclusive"
    gc_alone = {p["step"]: p for p in ablate.analyse(records, "inference", steps, base)["per_step"]}["gc_collect"]
    assert gc_alone["sufficient"] == "not sufficient"
    assert "RSS inconclusive, but the heap grows" in gc_alone["sufficient_why"]
    # the heap creeping a few KiB per iteration under the floor is not a leak worth a step
    records[3] = _record(compose(base, ["gc_collect"]), 0, 8)
    by_step = {p["step"]: p for p in ablate.analyse(records, "inference", steps, base)["per_step"]}
    assert by_step["gc_collect"]["sufficient"] == "sufficient" and by_step["clear_session"]["necessary"] != "necessary"


# ---------------------------------------------------------------- TensorFlow smoke


@pytest.mark.tf
def test_tf_smoke_inference(tmp_path):
    out, path = io.StringIO(), tmp_path / "abl.json"
    code = cli.main(["ablate", "--loop", "inference", "--steps", "del_model,gc_collect", "--iterations", "3",
                     "--warmup", "1", "--json", str(path)], out=out)
    assert code == 0
    records = json.loads(path.read_text())["records"]
    assert [r["strategy"] for r in records] == ["rebuild_no_clear", "rebuild_no_clear+del_model+gc_collect",
                                                "rebuild_no_clear+del_model", "rebuild_no_clear+gc_collect"]
    assert all(r["status"] == "ok" and r["environment"]["tensorflow"] for r in records)
    assert "no cleanup" in out.getvalue() and "all but gc_collect" in out.getvalue()


def test_an_interrupt_keeps_and_shows_the_finished_variants(fake_steps, tmp_path, monkeypatch, capsys):
    from kerasbench import runner

    def two_then_interrupt(spec, loops, steps, base, progress, finished):
        for loop, strategy in ablate.pairs(loops[0], steps, base)[:2]:
            finished(runner.measure(runner.RunSpec(loop, strategy, iterations=4, warmup=0,
                                                   leak_bytes=LEAK_KIB * KIB)))
        raise KeyboardInterrupt

    from kerasbench.commands import ablate as command  # the session that measures the variants

    monkeypatch.setattr(command, "measure", two_then_interrupt)
    out, path = io.StringIO(), tmp_path / "abl.json"
    code = cli.main(["ablate", "--loop", "control", "--base", "control_leak_native", "--steps", ",".join(fake_steps),
                     "--json", str(path)], out=out)
    assert code == 130
    assert [r["strategy"] for r in json.loads(path.read_text())["records"]] == [
        "control_leak_native", compose("control_leak_native", fake_steps)]
    assert "only fake_release" in out.getvalue() and "missing: not measured" in out.getvalue()
    assert "2 of 8 variant(s) finished before the interrupt" in capsys.readouterr().err


def _with_peak(rec, mib):
    """`rec` with its loop's peak `mib` MiB over its baseline in every repeat (the summary judged again)."""
    from kerasbench import summary
    from kerasbench.runner import RunSpec

    for rep in rec["repeats"]:
        rep["result"]["peak_loop_rss"] = rep["result"]["baseline_rss"] + mib * 2**20
    spec = RunSpec(**{k: v for k, v in rec["spec"].items() if k in RunSpec.__dataclass_fields__})
    rec["summary"] = summary.summarize(rec["repeats"], spec, spec_floors(spec))
    return rec


def test_ablate_on_another_metric_asks_whether_a_step_keeps_it_where_the_full_cleanup_does():
    # every variant's growth is flat; the peak over the baseline is 400 MiB without clear_session, 20 with it
    steps, base = ("clear_session", "gc_collect"), "rebuild_no_clear"
    records = [_with_peak(_record(base, 0, 0), 400), _with_peak(_record(compose(base, steps), 0, 0), 20),
               _with_peak(_record(compose(base, ["clear_session"]), 0, 0), 21),
               _with_peak(_record(compose(base, ["gc_collect"]), 0, 0), 400)]
    result = ablate.analyse(records, "inference", steps, base, metric="peak_over_baseline")
    by_step = {p["step"]: p for p in result["per_step"]}
    assert (by_step["clear_session"]["sufficient"], by_step["clear_session"]["necessary"]) == ("sufficient",
                                                                                                "necessary")
    assert (by_step["gc_collect"]["sufficient"], by_step["gc_collect"]["necessary"]) == ("not sufficient",
                                                                                          "not necessary")
    text = ablate.text(result)
    assert "alone it keeps peak_over_baseline where the full cleanup does" in text
    assert ablate.variant_header(result)[-1] == "peak_over_baseline" and "+400.0 MiB" in text
    # on the growth (the default) the same records: every variant is flat, every step sufficient
    assert {p["sufficient"] for p in ablate.analyse(records, "inference", steps, base)["per_step"]} == {"sufficient"}


def test_all_steps_leave_out_another_backend_s_and_a_gpu_s_and_a_gpu_step_named_is_refused(capsys):
    """ablate measures on the CPU: torch_empty_cache (a GPU's) would skip, and with it the full cleanup and every
    leave-one-out but its own (on torch, 'full cleanup: skipped; necessary: n/a' for every step, before)."""
    from kerasbench.commands.ablate import chosen_steps
    from kerasbench.errors import UsageError

    on_torch, on_jax, on_tf = (chosen_steps("all", b) for b in ("torch", "jax", "tensorflow"))
    assert "torch_empty_cache" not in on_torch and "jax_clear_caches" not in on_torch
    assert "jax_clear_caches" in on_jax and "torch_empty_cache" not in on_jax
    assert not {"jax_clear_caches", "torch_empty_cache"} & set(on_tf)
    assert {"del_model", "clear_session", "gc_collect", "malloc_trim"} <= set(on_torch)
    with pytest.raises(UsageError, match="Step torch_empty_cache needs a GPU, and ablate measures on the CPU"):
        chosen_steps("del_model,torch_empty_cache", "torch")
    assert cli.main(["ablate", "--loop", "sweep", "--steps", "gc_collect,torch_empty_cache"]) == 2
    err = capsys.readouterr().err
    assert "torch_empty_cache needs a GPU" in err and len(err.strip().splitlines()) == 1
