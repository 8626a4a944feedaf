"""One verdict, whatever the count (protocol 9): known leaks over the references' own noise, judged at counts from
10 to 2,000 iterations, may move from inconclusive to decided, never between flat and grows."""

import functools
import json
import pathlib

import numpy as np
import pytest

from kerasbench import rule
from kerasbench.spec import RunSpec

KIB = 1024
REFERENCE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "reference" / "protocol8" / "tf-2.21.0.json"
COUNTS = (10, 20, 40, 80, 150, 300, 600, 1000, 2000)
LEVEL = rule.alpha_for(rule.planned_looks(8, 5000, True))  # the default profile's per-look level


@functools.lru_cache(maxsize=None)
def negatives(series: str):
    """The reference's long runs of TF pairs in process, inputs that repeat every iteration, both verdicts flat:
    their `series` readings are what a TF loop that keeps nothing looks like on this machine (the settling
    calibration's negatives)."""
    data = json.loads(REFERENCE.read_text())
    found = []
    for record in data["records"]:
        s = record["summary"]
        if record["status"] != "ok" or record["loop"] not in ("batch_stream", "tf1_graph", "tf_data") \
                or record["strategy"] == "varying_batch_shapes" \
                or (s["verdict"], s["heap_verdict"]) != ("flat", "flat"):
            continue
        for repeat in record["repeats"]:
            values = repeat["result"]["series"][series]
            if len(values) >= 500:
                found.append((f"{record['loop']} × {record['strategy']}", np.asarray(values, dtype=float)))
    return found


def verdicts(values, margin, at):
    return "".join(rule.judge(values[:n], margin, at, LEVEL).verdict[0] for n in COUNTS if n <= len(values))


@pytest.mark.parametrize("series, rates_kib, margin", [
    ("heap", (0, 0.5, 1, 2, 4, 8, 16, 64), rule.MARGINS["heap"]),
    ("rss", (0, 16, 32, 64, 128, 256, 512), rule.MARGINS["rss"]),
])
def test_known_leaks_over_real_noise_never_flip_between_flat_and_grows(series, rates_kib, margin):
    spec = RunSpec("batch_stream", "stable_batch_shapes").validate()
    at = rule.floor_at(spec, series, {"tensorflow": "2.21.0", "keras": "3.13.2"})
    found = negatives(series)
    assert len(found) >= 6, [name for name, _ in found]
    for rate in rates_kib:
        for name, noise in found:
            seen = verdicts(noise + np.arange(len(noise)) * rate * KIB, margin, at)
            assert not ("f" in seen and "g" in seen), (series, rate, name, seen)  # never both
            if rate * KIB <= margin / 2:
                assert "g" not in seen and seen.endswith("f"), (series, rate, name, seen)
            if rate * KIB >= 2 * margin:
                assert "f" not in seen and seen.endswith("g"), (series, rate, name, seen)
            # (a shape rule may still hold a verdict back for a look near the margin: TF's RSS warm-up, +300
            # KiB/iteration over its first ~60 iterations of function_in_loop, reads `settling` under a 128 KiB leak)
