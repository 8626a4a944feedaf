"""assert_no_growth's flakiness: N runs of a flat TF predict body and N of one leaking 64 KiB/iteration.

    python tests/flakiness.py [N] [ITERATIONS] [FLOOR_KIB]   # prints one line per run, then false failures and misses

Not collected by pytest (minutes of TensorFlow workers); its figures are quoted in docs/testing.md.
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]  # the bodies, and this clone's kerasbench

import tf_bodies  # noqa: E402

from kerasbench.testing import assert_no_growth  # noqa: E402
from kerasbench.units import KIB  # noqa: E402


def main() -> int:
    """Run both bodies N times each (alternating), print every outcome and the two counts."""
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    floor_kib = float(sys.argv[3]) if len(sys.argv) > 3 else None  # None: the calibrated floor, else 64 KiB
    false_failures = misses = 0
    for i in range(n):
        for body, leaking in ((tf_bodies.predict, False), (tf_bodies.predict_leaking, True)):
            started = time.monotonic()
            try:
                record = assert_no_growth(body, setup=tf_bodies.make_model, iterations=iterations,
                                          floor_kib=floor_kib)
                outcome, s = "passed", record["summary"]
            except AssertionError as e:
                outcome, s = "failed", getattr(e, "record", {}).get("summary", {})
                detail = str(e).splitlines()
            else:
                detail = []
            if leaking and outcome == "passed":
                misses += 1
            if not leaking and outcome == "failed":
                false_failures += 1
            growth = s.get("growth_per_iter")
            print(f"{i + 1:2d} {body.__name__:16s} {outcome:6s} "
                  + (f"growth {growth / KIB:+7.1f} KiB/it CI [{s['growth_ci_low'] / KIB:+.1f}, "
                     f"{s['growth_ci_high'] / KIB:+.1f}] verdict {s['verdict']}" if growth is not None
                     else " | ".join(detail[:2]))
                  + f"  {time.monotonic() - started:.0f} s", flush=True)
    print(f"flat body: {false_failures} false failure(s) in {n}; leaking body: {misses} miss(es) in {n}; "
          f"{iterations} iterations each, floor {s.get('floor', 0) / KIB:g} KiB/iteration; "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
