"""Writing results: every file kerasbench writes goes through here.

A write is atomic (a uniquely named temp file in the target's folder, then a rename), so a reader
never sees half a file and an interrupted write leaves the old one in place. A path that exists
must be a regular file (or a link to one, whose target is written): a device, a FIFO or a folder
given as an output is refused, never replaced. `check_writable` says so before an hour of
measuring, not after it. Inputs are checked here too: `check_readable` refuses what is not a regular
file (a FIFO would hang the reader, a device would never end), and `check_not_input` refuses an output
that is one of the command's inputs (the table would replace the records it was made from).
"""

import json
import os
import stat
import tempfile
from typing import Any, Sequence, Tuple

from .errors import UsageError


def clone_dir() -> str:
    """The folder kerasbench was imported from (the package's parent): a clone, or an editable install's checkout,
    holds the asv configs, benchmarks/ and docs/ there; workers put it first on their PYTHONPATH."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _target(path: str) -> str:
    """The file a write to `path` replaces: a symlink's target, so the link itself stays a link."""
    return os.path.realpath(path) if os.path.islink(path) else path


def _refuse_special(path: str, what: str) -> None:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise UsageError(f"Cannot write {what} to {path}: {e.strerror}.") from None
    if stat.S_ISDIR(mode):
        raise UsageError(f"Cannot write {what} to {path}: it is a directory.")
    if not stat.S_ISREG(mode):
        raise UsageError(f"Cannot write {what} to {path}: it exists and is not a regular file.")


def check_writable(path: str, what: str = "results") -> None:
    """Fail now, with a one-line UsageError, if `path` cannot be written."""
    target = _target(path)
    _refuse_special(target, what)
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise UsageError(f"Cannot write {what} to {path}: folder {directory} does not exist.")
    try:
        tempfile.TemporaryFile(dir=directory).close()
    except OSError as e:
        raise UsageError(f"Cannot write {what} to {path}: {e.strerror}.") from None


def check_readable(path: str, what: str = "records from {path}") -> str:
    """`path` if it is a regular file (or a link to one) that can be opened; a one-line UsageError otherwise."""
    where = "Cannot read " + what.format(path=path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise UsageError(f"{where}: no such file.") from None
    except OSError as e:
        raise UsageError(f"{where}: {e.strerror}.") from None
    if stat.S_ISDIR(mode):
        raise UsageError(f"{where}: it is a directory.")
    if not stat.S_ISREG(mode):
        raise UsageError(f"{where}: not a regular file (a FIFO, socket or device).")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{where}: permission denied.")
    return path


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet): compare where they resolve to
        return os.path.realpath(a) == os.path.realpath(b)


def check_not_input(output: str, inputs: Sequence[str], what: str = "the output") -> None:
    """UsageError if `output` is (or links to) one of the `inputs` files: writing it would destroy an input."""
    for path in inputs:
        if _same(output, path):
            raise UsageError(f"Cannot write {what} to {output}: it is one of the inputs ({path}); "
                             "give another path.")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path: str, text: str, what: str = "results") -> str:
    """Write `text` to `path` atomically; returns `path`. An existing file keeps its permissions."""
    target = _target(path)
    _refuse_special(target, what)
    directory = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".kerasbench-", suffix=os.path.splitext(target)[1] or ".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()  # mkstemp's 0600 would hide a report from a web server or a colleague
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def write_json(path: str, payload: Any, what: str = "results") -> str:
    """`payload` as indented JSON, written atomically."""
    return write_text(path, json.dumps(payload, indent=1, allow_nan=True), what)


def make_folder(path: str, what: str = "results") -> str:
    """`path` as a folder (made with its parents if missing); UsageError if that cannot be."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise UsageError(f"Cannot write {what} to {path}: {e.strerror}.") from None
    return path


def tree_size(folder: str) -> Tuple[int, int]:
    """(bytes of the regular files under `folder`, of which in files with other hard links): the disk an
    environment holds, and how much of it uv's cache shares (removing the folder does not free that part). Links
    are not followed; each file counts once."""
    total, shared, seen = 0, 0, set()
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
                shared += st.st_blocks * 512 if st.st_nlink > 1 else 0
    return total, shared
