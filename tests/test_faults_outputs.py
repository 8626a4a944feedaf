"""Fault suite, outputs (issue #15, classes 2 and 7): what an output path may be, and writers at the same time.

Every writer of kerasbench goes through kerasbench.files (a uniquely named temp file in the target's folder,
then a rename), so these tests exercise that one path and the two writers that used a fixed `<name>.tmp`
before it existed (the asv records writer and the dashboard's pages).
"""

import json
import os
import stat
import threading

import pytest

from kerasbench import files, record, tree
from kerasbench.cli import main
from kerasbench.errors import UsageError


def test_a_fifo_or_a_device_given_as_output_is_refused_and_left_alone(tmp_path, capsys):
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        files.write_text(str(fifo), "x")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert main(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "3",
                 "--json", str(fifo)]) == 2
    assert "not a regular file" in capsys.readouterr().err
    with pytest.raises(UsageError, match="not a regular file"):
        files.check_writable("/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_symlink_output_writes_its_target_and_stays_a_link(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    files.write_json(str(link), {"new": 1})
    assert link.is_symlink() and json.loads(target.read_text()) == {"new": 1}


def test_an_existing_output_keeps_its_permissions(tmp_path):
    path = tmp_path / "kept.json"
    path.write_text("{}")
    os.chmod(path, 0o600)
    files.write_json(str(path), {"a": 1})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def _hammer(write, path, writers=4, rounds=50):
    """Run `writers` threads that each write `path` `rounds` times while a reader parses it; the reader's errors."""
    errors, done = [], threading.Event()

    def writer(k):
        for i in range(rounds):
            write(path, {"writer": k, "round": i, "pad": "x" * 20000})

    def reader():
        while not done.is_set():
            try:
                with open(path) as f:
                    json.load(f)
            except FileNotFoundError:
                pass
            except ValueError as e:  # half a file
                errors.append(str(e))

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(writers)]
    watcher = threading.Thread(target=reader)
    watcher.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    watcher.join()
    return errors


def test_concurrent_writers_never_leave_half_a_file_or_a_temp_file(tmp_path):
    path = str(tmp_path / "out.json")
    assert _hammer(files.write_json, path) == []
    assert json.loads(open(path).read())["round"] == 49
    assert os.listdir(tmp_path) == ["out.json"]  # every temp file renamed or removed


def test_concurrent_asv_records_writers_never_leave_half_a_file(tmp_path):
    folder = str(tmp_path / "records" / "box" / "abcdef12-env")

    def write(path, payload):
        tree.save_records(folder, "control", record.records_payload([], **payload))

    assert _hammer(write, os.path.join(folder, "control.json")) == []
    assert os.listdir(folder) == ["control.json"]


def test_a_planted_link_at_a_temp_name_is_not_followed(tmp_path):
    """The old writers used `<name>.tmp`: a link planted there redirected the write. Temp names are unique now."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "page.html.tmp").symlink_to(victim)
    files.write_text(str(tmp_path / "page.html"), "<p>page</p>")
    assert victim.read_text() == "keep me"
    assert (tmp_path / "page.html").read_text() == "<p>page</p>"


def test_a_run_over_an_existing_records_file_says_it_replaces_it(tmp_path, capsys):
    path = tmp_path / "out.json"
    path.write_text('{"schema": 1, "records": []}')
    assert main(["run", "--loop", "control", "--strategy", "control_noop", "--iterations", "3", "--warmup", "0",
                 "--json", str(path)]) == 0
    assert f"{path} exists: this run's records replace it" in capsys.readouterr().err
    assert json.loads(path.read_text())["records"][0]["strategy"] == "control_noop"
