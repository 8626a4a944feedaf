"""session.Kept: records kept as their pairs end, in the named order, through an interrupt or a repro's error."""

from __future__ import annotations

import io
import json

import pytest

from kerasbench import session
from kerasbench.errors import UsageError

PAIRS = [("control", "control_noop"), ("control", "control_leak_native"), ("control", "control_leak_python")]


def fake(loop: str, strategy: str, status: str = "ok") -> dict:
    """A record of the fields Kept reads (the file is not validated: these are not whole records)."""
    return {"loop": loop, "strategy": strategy, "status": status}


def written(path) -> list:
    return [(r["loop"], r["strategy"]) for r in json.loads(path.read_text())["records"]]


def test_records_are_written_as_they_end_in_the_named_order(tmp_path):
    path = tmp_path / "out.json"
    kept = session.Kept(PAIRS, str(path), what="variant", ablation={"base": "b"})
    kept.finished(fake(*PAIRS[2]))
    assert written(path) == [PAIRS[2]]  # on disk as soon as it ends
    kept.finished(fake(*PAIRS[0]))
    assert written(path) == [PAIRS[0], PAIRS[2]]  # the named order, not the order they ended
    assert json.loads(path.read_text())["ablation"] == {"base": "b"}
    assert not kept.failed()
    kept.finished(fake(*PAIRS[1], status="stopped"))
    assert kept.failed() and written(path) == PAIRS


def test_a_record_of_a_pair_not_named_leaves_them_in_the_order_they_ended(tmp_path):
    kept = session.Kept(PAIRS[:2])
    for record in (fake(*PAIRS[1]), fake("repro", "reuse_model"), fake(*PAIRS[0])):
        kept.finished(record)
    assert [(r["loop"], r["strategy"]) for r in kept.records] == [PAIRS[1], ("repro", "reuse_model"), PAIRS[0]]


@pytest.mark.parametrize("error, said", [(KeyboardInterrupt, "2 of 3 variant(s) finished before the interrupt"),
                                         (UsageError("the repro raised"), None)])
def test_an_interrupt_or_a_repro_error_shows_and_keeps_what_finished(tmp_path, error, said):
    path = tmp_path / "out.json"
    kept = session.Kept(PAIRS, str(path), what="variant")
    shown, out, err = [], io.StringIO(), io.StringIO()

    def measure(finished):
        finished(fake(*PAIRS[1]))
        finished(fake(*PAIRS[0]))
        raise error

    with pytest.raises(type(error) if isinstance(error, Exception) else error):
        kept.through(measure, lambda: shown.append(len(kept.records)), out, err)
    assert shown == [2] and written(path) == PAIRS[:2]
    if said:
        assert err.getvalue() == f"kerasbench: {said}; kept in {path}\n" and out.getvalue() == ""
    else:
        assert out.getvalue() == f"wrote 2 record(s) to {path}\n" and err.getvalue() == ""


def test_an_interrupt_before_any_record_writes_nothing(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("earlier")
    kept, shown, err = session.Kept(PAIRS, str(path)), [], io.StringIO()

    def measure(finished):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        kept.through(measure, lambda: shown.append(1), io.StringIO(), err)
    assert shown == [] and path.read_text() == "earlier"
    assert err.getvalue() == "kerasbench: 0 of 3 pair(s) finished before the interrupt\n"


def test_a_write_that_fails_is_one_line_and_false(tmp_path, monkeypatch):
    def full(path, payload, what="results"):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(session, "write_json", full)
    path = tmp_path / "out.json"
    kept, out, err = session.Kept(PAIRS, str(path)), io.StringIO(), io.StringIO()
    kept.finished(fake(*PAIRS[0]))  # no traceback while measuring: the failure is said at the end
    assert kept.error == f"cannot write results to {path}: No space left on device"
    assert kept.report(out, err, write=False) is False
    assert err.getvalue() == f"kerasbench: error: {kept.error}\n" and out.getvalue() == ""
