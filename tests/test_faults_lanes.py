"""Fault suite, lanes (issue #61, class "a lane that cannot fail"): every script under .ci/ exits non-zero when a
run it makes fails or measures nothing it was asked to, with a line saying why; "no GPU visible" is its own exit
code (3), not green.

.ci/gpu-backends runs against a stand-in for the GPU machine's Python (PYTHON): pip installs nothing, and `kerasbench
run` writes the records a scenario gives (FAKE_RECORDS) or is the real one (a bad KERASBENCH_GPU_LOOPS: its exit 2).
.ci/answers runs against a stand-in `kerasbench` that exits as a scenario says.
"""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FAKE_PYTHON = """#!/usr/bin/env bash
if [ "$1 $2" = "-m pip" ]; then exit 0; fi
if [ "$1 $2 $3" = "-m kerasbench run" ] && [ -n "${FAKE_RECORDS:-}" ]; then
  while [ $# -gt 0 ]; do [ "$1" = --json ] && cp "$FAKE_RECORDS" "$2"; shift; done
  exit "${FAKE_RC:-0}"
fi
exec "$REAL_PYTHON" "$@"
"""


def _record(status, reason=""):
    return {"loop": "inference", "strategy": "reuse_model", "status": status, "reason": reason, "repeats": []}


GPU_LANES = {  # scenario: (environment, records every backend's run writes (None: the real kerasbench), exit, line)
    "a run exits 2 (bad KERASBENCH_GPU_LOOPS)": ({"KERASBENCH_GPU_LOOPS": "bogus"}, None, 1,
                                                 "FAILED: jax exited 2, no records: kerasbench: error: Unknown loop"),
    "a run exits 1": ({"FAKE_RC": "1"}, [_record("ok")], 1, "FAILED: jax exited 1"),
    "a pair failed": ({}, [_record("ok"), _record("failed", "worker died")], 1, "pair(s) failed: worker died"),
    "no GPU visible": ({}, [_record("skipped", "no GPU visible to jax")], 3, "NO GPU VISIBLE, nothing measured"),
    "every pair skipped otherwise": ({}, [_record("skipped", "the jax backend needs jax installed")], 4,
                                     "NOTHING MEASURED: jax: the jax backend needs jax installed"),
    "measured": ({}, [_record("ok"), _record("skipped", "strategy x does not apply")], 0, ""),
}


@pytest.mark.parametrize("case", GPU_LANES)
def test_the_gpu_lane_fails_when_a_run_fails_or_measures_nothing(case, tmp_path):
    env_extra, records, code, line = GPU_LANES[case]
    python = tmp_path / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    env = {**os.environ, "PYTHON": str(python), "REAL_PYTHON": sys.executable, "KERASBENCH_NO_CALIBRATE": "1",
           **env_extra}
    if records is not None:
        (tmp_path / "records.json").write_text(json.dumps({"schema": 1, "records": records}))
        env["FAKE_RECORDS"] = str(tmp_path / "records.json")
    done = subprocess.run([os.path.join(ROOT, ".ci", "gpu-backends"), "run", str(tmp_path / "d"),
                           str(tmp_path / "out")], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == code, (done.stdout, done.stderr)
    if code:
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("gpu-backends: ") and line in last, done.stderr
        assert "Traceback" not in done.stderr
    else:
        assert "gpu-backends: jax on gpu: 1 ok, 1 skipped" in done.stdout and not done.stderr.strip()


FAKE_KERASBENCH = """#!/usr/bin/env bash
echo "$FAKE_SAYS"
exit "$FAKE_RC"
"""


@pytest.mark.parametrize("rc, says, code", [
    (0, "0 to run", 0),
    (2, "kerasbench: error: Cannot read records file x.json: no such file.", 1),
    (1, "kerasbench: error: 1 answer failed", 1),
])
def test_the_answers_lane_fails_when_an_atlas_call_fails(tmp_path, rc, says, code):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "kerasbench").write_text(FAKE_KERASBENCH)
    (bin_ / "kerasbench").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}", "FAKE_RC": str(rc), "FAKE_SAYS": says}
    done = subprocess.run([os.path.join(ROOT, ".ci", "answers"), "60", "", "records", "--output", "site/atlas"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == code, (done.stdout, done.stderr)
    if code:
        assert says in done.stdout and f"::error::answers: kerasbench atlas exited {rc}" in done.stdout


@pytest.mark.parametrize("argv", [["gpu-backends"], ["gpu-backends", "run", "d"], ["answers", "1"],
                                  ["history", "push"], ["history", "fetch", "."]])
def test_a_lane_given_wrong_arguments_exits_2(argv, tmp_path):
    done = subprocess.run([os.path.join(ROOT, ".ci", argv[0]), *argv[1:]], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.strip(), (done.stdout, done.stderr)
