"""The record: one definition, its shipped JSON Schema, old records, the floor it is judged with, its folder tree."""

import dataclasses
import json
import os
import pathlib

import pytest

from kerasbench import loading, METRICS, record, recordtypes, rule, SCHEMA_VERSION, summary, tree
from kerasbench.releases import version_key
from kerasbench.runner import RunSpec, measure
from kerasbench.units import KIB
from kerasbench.rule import spec_floors

ROOT = pathlib.Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "docs" / "record.schema.json"
FIXTURES = sorted((ROOT / "tests" / "fixtures" / "compare").glob("*.json"))  # written by the code of schema 1


def test_the_shipped_schema_is_the_generated_one():
    assert SHIPPED.read_text() == record.schema_text(), \
        "docs/record.schema.json is stale: python -m kerasbench.record > docs/record.schema.json"


def test_the_schema_is_a_valid_json_schema_that_documents_every_metric():
    jsonschema = pytest.importorskip("jsonschema")
    schema = record.json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    summary = schema["$defs"]["Summary"]["properties"]
    for metric in METRICS.values():
        described = summary[metric.name]["description"]
        assert metric.description in described and metric.unit in described
    assert {"verdict", "floor", "floor_source", "p_trend", "repeats"} <= set(summary)


def test_the_record_spec_is_the_run_spec():
    fields = [f.name for f in dataclasses.fields(RunSpec)]
    assert list(recordtypes.RecordSpec.__annotations__) == fields


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_old_records_validate_and_load(path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = record.json_schema()
    payload = json.loads(path.read_text())
    jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/RecordsFile"}).validate(payload)
    loaded = loading.load_records([str(path)])
    assert [r for r, _, _ in loaded] == payload["records"]


def test_a_record_that_breaks_the_schema_fails_the_test_that_built_it():
    jsonschema = pytest.importorskip("jsonschema")
    spec = RunSpec("control", "control_noop", floor=64 * KIB)
    with pytest.raises(jsonschema.ValidationError):  # conftest validates every record built in-process
        summary.make_record(spec, [{"repeat": 0, "status": "lost", "reason": None, "result": None,
                                    "environment": None}], spec_floors(spec))


# ---------------------------------------------------------------- the floor, resolved once


def test_the_floor_is_resolved_when_the_record_is_judged():
    from kerasbench import rule

    skipped = measure(RunSpec("control", "clear_session"))  # does not apply: no worker
    summary, spec = skipped["summary"], skipped["spec"]
    assert summary["floor"] == rule.floors.default_resolution("rss", spec["iterations"])  # the resolution
    assert summary["floor_source"].startswith("default (no calibration for glibc at ")
    assert (spec["floor"], spec["floor_source"]) == (summary["floor"], summary["floor_source"])
    assert summary["margin"] == rule.MARGINS["rss"] and summary["margin_source"] == "default margin"

    given = measure(RunSpec("control", "clear_session", floor=8 * KIB))  # a given floor: the margin, kept as given
    assert given["summary"]["heap_margin"] == given["spec"]["floor"] == 8 * KIB
    assert given["summary"]["margin"] == 64 * KIB  # RSS at no less than what glibc's RSS resolves: rule.margin_for
    assert given["summary"]["margin_source"] == given["spec"]["floor_source"]
    assert given["summary"]["margin_source"].startswith("given (--floor-kib or RunSpec.floor)")


def test_validation_leaves_the_floor_to_the_record():
    spec = RunSpec("control", "control_noop").validate()
    assert spec.floor is None and spec.floor_source == ""
    from kerasbench import rule

    assert spec_floors(spec)["rss"](spec.iterations)[0] == rule.floors.default_resolution("rss", spec.iterations)


def test_a_summary_is_judged_at_the_floors_it_is_given_and_reads_no_calibration(monkeypatch):
    from kerasbench import rule

    def no_disk(*args, **kwargs):
        raise AssertionError("summarize read a calibration")

    monkeypatch.setattr(rule.floors, "floor_for", no_disk)
    record = json.loads(FIXTURES[-1].read_text())["records"][0]  # 4 iterations, a +3.7 MiB step at the first
    spec = RunSpec(**record["spec"])
    low = summary.summarize(record["repeats"], spec, rule.fixed_floors({"rss": 1.0, "heap": 1.0}, "test"))
    assert (low["floor"], low["floor_source"]) == (1.0, "test") and low["verdict"] != "flat"
    high = summary.summarize(record["repeats"], spec, rule.fixed_floors({"rss": 1e12, "heap": 1e12}, "test"))
    assert (high["floor"], high["verdict"]) == (1e12, "inconclusive")  # a resolution that wide decides nothing


# ---------------------------------------------------------------- files and the records tree


def test_records_payload_is_the_one_wrapper():
    assert record.records_payload([]) == {"schema": SCHEMA_VERSION, "records": []}
    assert list(record.records_payload([], triage={})) == ["schema", "triage", "records"]


def test_a_run_folder_round_trips(tmp_path, monkeypatch):
    monkeypatch.delenv(tree.RECORDS_DIR_VAR, raising=False)
    root = tree.records_root(str(tmp_path))
    assert root == str(tmp_path / ".asv" / "records")
    payload = json.loads(FIXTURES[0].read_text())
    folder = tree.run_folder(root, "0123abcd" + "ef" * 16, "virtualenv-py3.11-tensorflow-cpu2.12.1", "tcmalloc")
    path = tree.save_records(folder, "sweep", record.records_payload(payload["records"], profile="quick"))
    host, commit, env = tree.place_of(path)
    assert (commit, env) == ("0123abcd", "virtualenv-py3.11-tensorflow-cpu2.12.1-tcmalloc") and host
    assert tree.newest_run(root) == ((host, commit), [folder], 0)
    assert [r for r, _, _ in loading.load_records([root])] == payload["records"]
    assert os.listdir(folder) == ["sweep.json"]  # written atomically
    monkeypatch.setenv(tree.RECORDS_DIR_VAR, str(tmp_path / "elsewhere"))
    assert tree.records_root(str(tmp_path)) == str(tmp_path / "elsewhere")


def test_one_version_sort_key():
    versions = ["2.21.0", "2.9.0", "2.12.1", "2.12.0rc1"]
    # by PEP 440: a release candidate before its release (it sorted after 2.12.1 by numeric parts)
    assert sorted(versions, key=version_key) == ["2.9.0", "2.12.0rc1", "2.12.1", "2.21.0"]
    assert version_key("2.16.1") < (2, 16, 2)


def test_the_records_vocabularies_are_the_registries():
    """The schema's literals are the words the code says: shapes, what grew, stop reasons."""
    from typing import get_args

    from kerasbench import worker

    assert list(get_args(recordtypes.Shape)) == list(rule.SHAPES)
    assert list(get_args(recordtypes.GrowthKind)) == list(rule.GROWTH_KINDS)
    assert list(get_args(recordtypes.StopReason)) == list(worker.STOP_REASONS)
