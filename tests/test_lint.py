"""The code passes the linter configured in pyproject.toml (ruff): what a reviewer would flag first."""

import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_ruff_is_clean():
    ruff = shutil.which("ruff") or str(pathlib.Path(sys.executable).with_name("ruff"))
    proc = subprocess.run([ruff, "check", "kerasbench", "benchmarks", "tests"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
