"""The record: what one measured (loop shape, strategy) pair leaves behind, and what is checked of one.

A record is a plain JSON-ready dict; the TypedDicts of kerasbench.recordtypes say what it holds (the names
other modules use are imported here too), and `json_schema()` turns them (and the metric registry, for the
summary) into the JSON Schema shipped as docs/record.schema.json (`python -m kerasbench.record >
docs/record.schema.json` regenerates it); `check_record` checks a record read back against it. Records travel
in a records file (`records_payload`).

The other jobs around a record have modules of their own: building one from a worker's repeats (summary.py),
the records tree beside asv's results (tree.py), reading records back for compare and report (loading.py).
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, Literal, Optional, Sequence, Union, get_args, get_origin

from ._compat import FRAMEWORKS
from .errors import UsageError
from .metrics import METRICS
from .recordtypes import AllocatorCheck, Environment, Record, RecordsFile, Repeat, Summary  # noqa: F401 (theirs)

# Bump when what a record measures or means changes: asv benchmark versions follow it, so asv
# notices that results from before and after are not comparable. Records of schema 1 written
# before a key existed lack it: readers use .get for everything newer than the first records.
SCHEMA_VERSION = 1

# Open definitions: probes and the worker's environment may add keys the readers do not need.
_OPEN = {"Result", "Series", "Timing", "Environment"}


OTHER_BACKENDS = tuple(FRAMEWORKS)  # Keras 3's backends besides tensorflow: a record of one is a side of its own


def backend_of(environment: Optional[Dict[str, Any]]) -> str:
    """The Keras backend a record's environment ran (tensorflow for records made before backends were recorded)."""
    return str((environment or {}).get("keras_backend") or "tensorflow")


def framework_text(environment: Dict[str, Any]) -> str:
    """What a record's loops ran on, for people: 'TF 2.21.0, Keras 3.13.2' ('Keras 2.16.0 (tf_keras)'), or on jax
    and torch 'Keras 3.13.2 on jax 0.10.2 (TF 2.21.0 installed, not imported)'; a loop that imported neither (the
    control loop) says so."""
    env, backend = environment, backend_of(environment)
    if not env.get("tensorflow") and not env.get("keras"):  # a control loop: before, "TF None, Keras None"
        return "TF and Keras not imported (the loop ran without them)"
    if backend in OTHER_BACKENDS:
        versions = env.get("backend_versions") or {}
        installed = f" (TF {env['tensorflow']} installed, not imported)" if env.get("tensorflow") else ""
        return f"Keras {env.get('keras')} on {backend} {versions.get(backend) or '?'}{installed}"
    tf_keras = " (tf_keras)" if env.get("keras_package") == "tf_keras" else ""
    return f"TF {env.get('tensorflow')}, Keras {env.get('keras')}{tf_keras}"


def records_payload(records: Sequence[Record], **extra: Any) -> RecordsFile:
    """A records file's content: the schema version, `extra` (e.g. profile, triage), the records."""
    return {"schema": SCHEMA_VERSION, **extra, "records": list(records)}


# ---------------------------------------------------------------- series while measuring: compact arrays
#
# A series holds one reading per measured iteration: a run of microsecond iterations makes millions. As Python lists
# of Python numbers they cost 30-40 bytes a reading, and the worker's result came to the runner as one JSON line of
# them (parsed into lists again: 3 million iterations took the runner to 740 MiB). So the worker sends each series
# as the bytes of an array (`wire_series`, zlib-compressed in the JSON line) and the runner keeps it as one
# (`series_arrays`): array('q') for integers, array('d') for floats, 8 bytes a reading, until the pair's repeats
# are done. Then each is listed once (`listed_repeats`) and the record built from them: a record is a plain
# JSON-ready dict, judged from the lists as before. A sequential run's looks keep theirs as arrays too
# (rule.Decider).
# A series that is neither all integers nor all floats (a heap reader that failed leaves None) stays a list.

WIRE_KEYS = ("typecode", "length", "zlib_base64")  # a series as the worker sends it: {key: ...} in place of the list


def compact(values: Any) -> Any:
    """`values` as an array: 'q' when every value is an int (readings: never a bool), 'd' when every one is a float;
    else as it is (a list with None in it, mixed ints and floats, ints beyond 64 bits, an array already)."""
    from array import array

    if not isinstance(values, list) or not values:
        return values
    if type(values[0]) is int:
        try:
            return array("q", values)  # refuses a float or None (TypeError), an int beyond 64 bits (OverflowError)
        except (TypeError, OverflowError):
            return values
    if all(type(v) is float for v in values):  # array("d") would take ints too, and write them back as floats
        return array("d", values)
    return values


def wire_series(series: Dict[str, Any]) -> Dict[str, Any]:
    """The worker's series for its result's JSON line: each compact one as {"typecode", "length", "zlib_base64"}
    (its array's bytes, compressed: a flat trace count is a few bytes, not 3 a reading), the others as they are."""
    import base64
    import zlib

    sent = {}
    for name, values in series.items():
        packed = compact(values)
        if packed is values:
            sent[name] = values
            continue
        data = base64.b64encode(zlib.compress(packed.tobytes(), 1)).decode("ascii")
        sent[name] = dict(zip(WIRE_KEYS, (packed.typecode, len(packed), data)))
    return sent


def series_arrays(series: Any) -> Any:
    """The series of a worker's result as the runner keeps them: what `wire_series` sent back into arrays, a list of
    numbers into one (compact); ValueError when a sent series is not one (a bad typecode, length or data)."""
    import base64
    import zlib
    from array import array

    if not isinstance(series, dict):
        return series
    kept = {}
    for name, values in series.items():
        if not isinstance(values, dict):
            kept[name] = compact(values)
            continue
        typecode, length, data = (values.get(k) for k in WIRE_KEYS)
        if typecode not in ("q", "d") or type(length) is not int or length < 0 or not isinstance(data, str):
            raise ValueError(f"series {name!r} is not a sent series")
        try:
            raw = zlib.decompress(base64.b64decode(data.encode("ascii"), validate=True))
        except (ValueError, zlib.error) as e:  # binascii.Error and UnicodeEncodeError are ValueErrors
            raise ValueError(f"series {name!r} cannot be read back: {e}") from None
        values = array(typecode)
        if len(raw) != length * values.itemsize:
            raise ValueError(f"series {name!r} holds {len(raw)} bytes, not {length} readings")
        values.frombytes(raw)
        kept[name] = values
    return kept


def listed(values: Any) -> Any:
    """A series as a record holds it: an array as a list (ints that repeat share one object: a flat RSS series of
    millions of readings holds a few distinct ints, 8 bytes a reading); anything else as it is."""
    from array import array

    if not isinstance(values, array):
        return values
    if values.typecode != "q":
        return values.tolist()
    shared: Dict[int, int] = {}
    return list(map(shared.setdefault, values, values))


def listed_repeats(repeats: Sequence[Repeat]) -> Sequence[Repeat]:
    """`repeats` with every result's series as lists (listed), in place: what a record is built from (JSON-ready).
    One series at a time: its array is let go as its list is made."""
    for repeat in repeats:
        result = repeat.get("result")
        series = result.get("series") if isinstance(result, dict) else None
        if isinstance(series, dict):
            for name in list(series):
                series[name] = listed(series[name])
    return repeats


# ---------------------------------------------------------------- checking a record against its schema

RECORD_KEYS = {"loop", "strategy", "spec", "status", "repeats", "summary"}  # what every record has had

_JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
               "integer": int, "number": (int, float)}
_SCALARS = {"integer": (int,), "number": (int, float), "null": (type(None),), "string": (str,), "boolean": (bool,)}


def _is(value: Any, kind: str) -> bool:
    return isinstance(value, _JSON_TYPES[kind]) and not (isinstance(value, bool) and kind in ("integer", "number"))


def _lenient(schema: Any) -> Any:
    """The record's schema as records read back are held to: no key required (older records lack keys that came
    later) and every object open (newer writers, probes add keys); what is checked is that each value has its type."""
    if isinstance(schema, list):
        return [_lenient(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _lenient(v) for k, v in schema.items() if k != "required"}
    if out.get("additionalProperties") is False:
        out["additionalProperties"] = True
    return out


def _validator() -> Any:
    """A jsonschema validator (draft 2020-12) of one record by _lenient(json_schema()), made once. A series (an
    array of scalars: a million readings at a million iterations) is checked at once, item by item by jsonschema
    only when that finds one of another type (9x slower, measured, for the same answer)."""
    if "validator" not in _SCHEMA:
        from jsonschema import Draft202012Validator, validators

        plain = Draft202012Validator.VALIDATORS["items"]

        def items(validator: Any, each: Any, instance: Any, schema: Any) -> Any:
            kinds = each.get("type") if isinstance(each, dict) and set(each) == {"type"} else None
            if kinds and isinstance(instance, list):
                allowed = tuple(t for k in ([kinds] if isinstance(kinds, str) else kinds) for t in _SCALARS.get(k, ()))
                if all(type(v) in allowed for v in instance):
                    return
            yield from plain(validator, each, instance, schema)

        checker = validators.extend(Draft202012Validator, {"items": items})
        _SCHEMA["validator"] = checker(_lenient(_record_schema()))
    return _SCHEMA["validator"]


def _said(error: Any, where: str) -> str:
    """One jsonschema error in words: 'records[0].summary is a string, expected object'; of an anyOf, its first
    member's (a value may be null or a definition: what the definition wants is the useful half)."""
    while error.validator == "anyOf" and error.context:
        error = next((e for e in error.context if e.relative_schema_path[0] == 0), error.context[0])
    at = where + "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in error.absolute_path)
    value = error.instance
    if error.validator == "enum":
        return f"{at} is {value!r}, expected one of {', '.join(map(repr, error.validator_value))}"
    if error.validator == "type":
        kinds = [error.validator_value] if isinstance(error.validator_value, str) else error.validator_value
        found = next((k for k in ("boolean", "integer", "number", "string", "null", "array", "object")
                      if _is(value, k)), type(value).__name__)
        return f"{at} is {'an' if found[0] in 'aeiou' else 'a'} {found}, expected {' or '.join(kinds)}"
    return f"{at}: {error.message}"


def type_problem(value: Any, where: str) -> Optional[str]:
    """Where `value` (one record) has a type the record's JSON Schema does not allow, e.g. 'records[0].summary is a
    string, expected object' (jsonschema's first error); None when every value present has its type."""
    error = next(iter(_validator().iter_errors(value)), None)
    return None if error is None else _said(error, where)


def check_record(record: Any, path: str, index: int) -> Record:
    """`record` if it is a kerasbench record whose every value has its type; a one-line UsageError otherwise."""
    if not isinstance(record, dict) or not RECORD_KEYS <= set(record):
        raise UsageError(f"Not a kerasbench record in {path} (records[{index}]): "
                         f"expected the keys {', '.join(sorted(RECORD_KEYS))}.")
    problem = type_problem(record, f"records[{index}]")
    if problem:
        raise UsageError(f"Not a kerasbench record in {path}: {problem}.")
    return record


_SCHEMA: Dict[str, Any] = {}


def _record_schema() -> Dict[str, Any]:
    if "schema" not in _SCHEMA:
        _SCHEMA["schema"] = json_schema()
    return _SCHEMA["schema"]


# ---------------------------------------------------------------- the JSON Schema


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__")


def _schema_of(tp: Any, defs: Dict[str, Any]) -> Dict[str, Any]:
    """The JSON Schema of a type annotation; TypedDicts go into `defs` and are referred to."""
    simple = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}
    if tp is Any:
        return {}
    if tp in simple:
        return {"type": simple[tp]}
    origin, args = get_origin(tp), get_args(tp)
    if origin is Union:
        members = [_schema_of(a, defs) for a in args]
        if all(set(m) == {"type"} for m in members):
            return {"type": [m["type"] for m in members]}
        return {"anyOf": members}
    if origin is Literal:
        return {"enum": list(args)}
    if origin is list:
        return {"type": "array", "items": _schema_of(args[0], defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema_of(args[1], defs)}
    if _is_typeddict(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder: a definition may refer to itself
            defs[name] = _object_schema(tp, defs)
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"No JSON Schema for the annotation {tp!r}.")


def _object_schema(td: Any, defs: Dict[str, Any]) -> Dict[str, Any]:
    from typing import get_type_hints

    hints = get_type_hints(td, globalns=vars(sys.modules[td.__module__]))
    schema: Dict[str, Any] = {"description": " ".join((td.__doc__ or "").split()), "type": "object",
                              "properties": {k: _schema_of(t, defs) for k, t in hints.items()}}
    if td.__name__ == "Summary":
        schema["properties"] = {**{m.name: {"type": ["number", "null"], "description": f"{m.description} [{m.unit}]"}
                                   for m in METRICS.values()}, **schema["properties"]}
    schema["required"] = [k for k in hints if k in td.__required_keys__]
    schema["additionalProperties"] = td.__name__ in _OPEN
    return schema


def json_schema() -> Dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one record, generated from recordtypes' definitions and METRICS."""
    defs: Dict[str, Any] = {}
    root = _schema_of(Record, defs)
    _schema_of(RecordsFile, defs)  # the file around the records: validate one with {"$ref": "#/$defs/RecordsFile"}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"kerasbench record, schema {SCHEMA_VERSION}",
            "description": defs["Record"]["description"], **root, "$defs": dict(sorted(defs.items()))}


def schema_text() -> str:
    """json_schema() as the text of docs/record.schema.json."""
    return json.dumps(json_schema(), indent=1) + "\n"


if __name__ == "__main__":
    sys.stdout.write(schema_text())
