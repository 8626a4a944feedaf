"""Reading inputs and writing results: every file kerasbench reads from a path it was given, and every file it
writes, goes through here.

Reading (`read_bytes`, `read_text`, `read_json`): the file is opened without blocking and the opened descriptor
fstat()ed: what is not a regular file is refused, named (a FIFO would hang the reader, a device never ends), and
so is a file larger than its kind's limit (a link to /dev/zero, a wrong file) or JSON nested deeper than any file
kerasbench reads (a RecursionError further on). Each refusal is a one-line UsageError naming the file
(`ReadError`, whose `problem` a caller may say in its own words).

Writing: a write is atomic (a uniquely named temp file in the target's folder, then a rename), so a reader
never sees half a file and an interrupted write leaves the old one in place. A path that exists must be a
regular file (or a link to one, whose target is written): a device, a FIFO or a folder given as an output is
refused, never replaced. `check_outputs` says so before an hour of measuring, not after it: every command
declares its outputs and its inputs there, and an output that is an input, would be read as a records file of an
input folder, is a stored calibration, or is another output of the same command, is refused before any work.
"""

import contextlib
import json
import os
import re
import stat
import tempfile
from typing import IO, Any, Callable, List, Mapping, Optional, Sequence, Tuple, Union

from .errors import UsageError
from .sizes import GIB, KIB, MIB

# What a file of each kind may weigh. Configs, calibrations, notes and machine files are a few KiB (the asv matrix
# 7 KiB, a calibration 20 KiB): 1 MiB is far beyond a real one and bounds a wrong file's cost. A repro file is Python
# source: 16 MiB. Records files hold every reading of every repeat (the docs/reference/ files of all pairs × 5000
# iterations are 4.5 MiB) and asv results or package indexes are alike: 1 GiB never refuses a real one and bounds the
# memory a wrong one takes to a few GiB parsed, rather than all of it (a link to /dev/zero is refused as a device).
CONFIG_LIMIT = MIB
SOURCE_LIMIT = 16 * MIB
DATA_LIMIT = GIB
# No file kerasbench reads nests more than about 10 levels (a record's repeats' results' functions' paths). Deeper
# JSON is not one of them, and code that walks a parsed file (the record type check, comparing, rendering) must
# not run into Python's recursion limit (about 1000) on it.
MAX_DEPTH = 100
_RAISE = object()


class ReadError(UsageError):
    """A file that cannot be read or parsed: the message names it; `problem` is what is wrong with it."""

    def __init__(self, verb: str, kind: str, path: str, problem: str):
        super().__init__(f"Cannot {verb} {kind} {path}: {problem}.")
        self.path, self.problem = path, problem


def clone_dir() -> str:
    """The folder kerasbench was imported from (the package's parent): a clone, or an editable install's checkout,
    holds the asv configs, benchmarks/ and docs/ there; workers put it first on their PYTHONPATH."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def from_clone() -> bool:
    """Whether kerasbench runs from a clone (or an editable install's checkout: pyproject.toml beside the package),
    not from an installed wheel (clone_dir is then site-packages, which holds no configs and must not be put on a
    worker's PYTHONPATH: another environment's Python would import this one's TensorFlow from it)."""
    return os.path.isfile(os.path.join(clone_dir(), "pyproject.toml"))


def user_cache(*parts: str) -> str:
    """kerasbench's folder in the user's cache, $XDG_CACHE_HOME/kerasbench, else ~/.cache/kerasbench (joined with
    `parts`): calibrations, and an installed wheel's asv environments and worker path (no clone to hold them)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "kerasbench", *parts)


def worker_path() -> str:
    """The folder a worker puts first on its PYTHONPATH to import kerasbench: the clone; from an installed wheel, a
    folder of the user's cache holding only a link to the package (made once per installed package), so a worker
    on another environment's Python imports kerasbench and nothing else of this environment's site-packages."""
    if from_clone():
        return clone_dir()
    package = os.path.dirname(os.path.abspath(__file__))
    import hashlib

    folder = user_cache("path", hashlib.sha256(package.encode()).hexdigest()[:12])
    link = os.path.join(folder, "kerasbench")
    if os.path.realpath(link) != os.path.realpath(package):
        make_folder(folder, "the workers' path folder")
        temporary = f"{link}.{os.getpid()}.tmp"
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            os.symlink(package, temporary)
            os.replace(temporary, link)  # atomic: a worker starting beside never sees it missing
        except OSError as e:
            raise UsageError(f"Cannot write the workers' path folder {folder}: {e.strerror}.") from None
    return folder


def _size(n: int) -> str:
    return f"{n // GIB} GiB" if n >= GIB and n % GIB == 0 else f"{n // MIB} MiB" if n >= MIB else f"{n // KIB} KiB"


def what_it_is(mode: int) -> str:
    """'a FIFO', 'a character device', … of a file mode that is not a regular file's."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a link")):
        if test(mode):
            return name
    return "not a regular file"


def _not_regular(mode: int) -> str:
    return "it is a directory" if stat.S_ISDIR(mode) else f"it is {what_it_is(mode)}, not a regular file"


def check_readable(path: str, kind: str = "records file") -> str:
    """`path` if it is a regular file (or a link to one); a one-line ReadError otherwise, nothing opened (a FIFO
    found while listing a folder is refused before anything is read)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ReadError("read", kind, path, "no such file") from None
    except OSError as e:
        raise ReadError("read", kind, path, (e.strerror or str(e)).lower()) from None
    if not stat.S_ISREG(mode):
        raise ReadError("read", kind, path, _not_regular(mode))
    return path


def read_bytes(path: str, kind: str, limit: int = CONFIG_LIMIT) -> bytes:
    """The content of the regular file `path`, at most `limit` bytes; a one-line ReadError naming it otherwise.

    Opened with O_NONBLOCK (opening a FIFO that raced in after the check cannot hang) and checked on the opened
    descriptor, so what is read is what was checked. Links are followed: a link to a records file is one.
    """
    check_readable(path, kind)  # before opening: opening a device can itself do something
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise ReadError("read", kind, path, (e.strerror or str(e)).lower()) from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ReadError("read", kind, path, _not_regular(st.st_mode))
        a = "" if kind.startswith("the ") else "an " if kind[:1] in "aeiou" else "a "
        too_large = f"larger than {_size(limit)}, the most {a}{kind} can be (is it the right file?)"
        if st.st_size > limit:
            raise ReadError("read", kind, path, too_large)
        try:
            data = f.read(limit + 1)  # a file that grows (or lies about its size, as /proc's do) stops here too
        except OSError as e:
            raise ReadError("read", kind, path, (e.strerror or str(e)).lower()) from None
    if len(data) > limit:
        raise ReadError("read", kind, path, too_large)
    return data


def read_text(path: str, kind: str, limit: int = CONFIG_LIMIT) -> str:
    """read_bytes as UTF-8 text."""
    data = read_bytes(path, kind, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ReadError("read", kind, path, f"not UTF-8 text (byte {e.start})") from None


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` (parsed JSON) nests more than `limit` lists and objects. Iterative, level by level: a list of
    numbers (a series) costs a set of its types, not a Python loop over it."""
    level, depth = [value], 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below = []
        for item in level:
            members = item.values() if type(item) is dict else item
            if {dict, list} & set(map(type, members)):
                below += [m for m in members if type(m) in (dict, list)]
        level = below
    return False


def parse_json(text: str, kind: str, path: str, comments: bool = False, invalid: Any = _RAISE) -> Any:
    """`text` (of the file `path`) parsed as JSON (asv's `//` comment lines skipped with `comments`); a ReadError
    when it is not JSON (or `invalid` when given) or nests deeper than MAX_DEPTH (always an error)."""
    if comments:
        text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    deep = ReadError("parse", kind, path, f"nested deeper than {MAX_DEPTH} levels (no file kerasbench reads is)")
    try:
        value = json.loads(text)
    except RecursionError:
        raise deep from None
    except ValueError as e:  # truncated or corrupt
        if invalid is not _RAISE:
            return invalid
        raise ReadError("parse", kind, path, f"{e} (truncated or corrupt JSON?)") from None
    if isinstance(value, (dict, list)) and too_deep(value):
        raise deep
    return value


def read_json(path: str, kind: str, limit: int = CONFIG_LIMIT, comments: bool = False,
              missing: Any = _RAISE) -> Any:
    """The parsed JSON of the file `path` (read_text, then parse_json); `missing` when given and no file is there."""
    if missing is not _RAISE and not os.path.lexists(path):
        return missing
    return parse_json(read_text(path, kind, limit), kind, path, comments)


# ---------------------------------------------------------------- writing


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
        raise UsageError(f"Cannot write {what} to {path}: it exists and is {what_it_is(mode)}, not a regular file.")


def _immutable(path: str) -> bool:
    """Whether the file `path` is immutable or append-only (chattr +i / +a): no rename can replace it, root's neither.
    False where the file system does not say (the ioctl is Linux's)."""
    try:
        import fcntl
        import struct

        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except (ImportError, OSError):
        return False
    try:
        flags = struct.unpack("l", fcntl.ioctl(fd, 0x80086601, struct.pack("l", 0)))[0]  # FS_IOC_GETFLAGS
    except OSError:  # ENOTTY: a file system without the flags
        return False
    finally:
        os.close(fd)
    return bool(flags & (0x10 | 0x20))  # FS_IMMUTABLE_FL, FS_APPEND_FL


def check_writable(path: str, what: str = "results") -> None:
    """Fail now, with a one-line UsageError, if `path` cannot be written: a folder (named with a trailing /, made or
    not), a special file, a missing or unwritable folder, an immutable file."""
    if (path.endswith(os.sep) or os.path.basename(path) in (".", "..")) and not os.path.isdir(path):
        # a folder to be: before, found after measuring (an existing one is "a directory", below)
        raise UsageError(f"Cannot write {what} to {path}: it names a folder, not a file; give a file name, e.g. "
                         f"{os.path.join(path, 'records.json')}.")
    target = _target(path)
    _refuse_special(target, what)
    if os.path.isfile(target) and _immutable(target):
        raise UsageError(f"Cannot write {what} to {path}: it is immutable or append-only (chattr +i or +a), so it "
                         "cannot be replaced; give another file, or chattr -i it.")
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise UsageError(f"Cannot write {what} to {path}: folder {directory} does not exist.")
    try:
        tempfile.TemporaryFile(dir=directory).close()
    except OSError as e:
        raise UsageError(f"Cannot write {what} to {path}: {e.strerror}.") from None


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet): compare where they resolve to
        return os.path.realpath(a) == os.path.realpath(b)


def inside(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or somewhere under it, links resolved."""
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or os.path.commonpath([path, folder]) == folder


def records_name(relative: str) -> bool:
    """Whether a file at `relative` (to a folder given as records) is read as a records file: a *.json whose name and
    folders do not start with '.' (kerasbench.loading.find_records_files lists exactly these)."""
    parts = relative.split(os.sep)
    return parts[-1].endswith(".json") and not any(part.startswith(".") for part in parts)


def _links_read(folder: str) -> List[str]:
    """The links among the files a reader of the records folder `folder` reads (records_name)."""
    found = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [os.path.join(root, n) for n in names
                  if records_name(n) and os.path.islink(os.path.join(root, n))]
    return found


Paths = Union[None, str, Sequence[Optional[str]]]


def _given(paths: Paths) -> List[str]:
    return [p for p in ([paths] if isinstance(paths, str) else paths or []) if p]


def _refuse_input(output: str, label: str, inputs: Mapping[str, Paths]) -> None:
    """UsageError if writing `output` would replace an input, or add a file an input folder's reader would read."""
    written = os.path.realpath(_target(output))
    for source, paths in inputs.items():
        for path in _given(paths):
            if os.path.isdir(path):
                if inside(written, path) and records_name(os.path.relpath(written, os.path.realpath(path))):
                    if os.path.isfile(written):
                        raise UsageError(f"Cannot write {label} to {output}: it is one of the inputs (a records file "
                                         f"of {path}, given as {source}); give another path.")
                    raise UsageError(f"Cannot write {label} to {output}: it is inside {path}, a folder given as input "
                                     f"({source}), where it would be read as a records file; give a path outside it.")
                for link in _links_read(path):  # a link in the folder to the output: the output is read through it
                    if _same(output, link):
                        raise UsageError(f"Cannot write {label} to {output}: it is one of the inputs ({source}: {link} "
                                         "links to it); give another path.")
            elif _same(output, path):
                raise UsageError(f"Cannot write {label} to {output}: it is one of the inputs ({source} {path}); "
                                 "give another path.")


def _refuse_calibration(output: str, label: str, folders: Sequence[str]) -> None:
    """UsageError if `output` is a *.json in one of `folders`, those of stored calibrations: every run reads those as
    calibrations (records written there are 'a bad calibration' ever after, or replace a good one), and the shipped
    ones are the clone's."""
    written = os.path.realpath(_target(output))
    for folder in folders:
        if os.path.dirname(written) == os.path.realpath(folder) and written.endswith(".json"):
            raise UsageError(f"Cannot write {label} to {output}: it is in {folder}, the folder of stored calibrations, "
                             "whose .json files kerasbench reads as calibrations; give a path outside it.")


def check_outputs(outputs: Mapping[str, Optional[str]], inputs: Optional[Mapping[str, Paths]] = None,
                  calibrations: Sequence[str] = ()) -> None:
    """Every output of a command, checked before any work: a one-line UsageError now, not after an hour of measuring.

    `outputs` {label: path} ('--json': args.json; a None path is not written); `inputs` {label: path or paths} of
    every file and folder the command reads. An output is refused when it cannot be written (check_writable), is
    another output of the same command, is one of the inputs (or links to it), would be read as a records file
    of an input folder, or is a *.json in one of `calibrations`, the folders of stored calibrations (the commands
    give calibration_store.folders(): commands.options.check_outputs; this module cannot ask it: it reads through
    this one).
    """
    given = [(label, path) for label, path in outputs.items() if path is not None]
    for index, (label, path) in enumerate(given):
        if not path:
            raise UsageError(f"Invalid path for {label}. Received: ''. Expected a file name.")
        check_writable(path, label)
        for other, earlier in given[:index]:
            if _same(path, earlier):
                raise UsageError(f"Cannot write {label} to {path}: {other} is written there too; "
                                 "give them different paths.")
        _refuse_input(path, label, inputs or {})
        _refuse_calibration(path, label, calibrations)


def check_not_input(output: str, inputs: Sequence[str], what: str = "the output") -> None:
    """UsageError if `output` is (or links to) one of the `inputs` files, or would be read in an input folder
    (check_outputs' rule, for a caller that checks writability itself)."""
    _refuse_input(output, what, {"input": list(inputs)})


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


TEMP_PREFIX = ".kerasbench-"  # a write's temporary file beside its target: the prefix, the writer's pid, '-', random
_TEMP = re.compile(r"\.kerasbench-(\d+)-[A-Za-z0-9_]+(\.[A-Za-z0-9]+)?")
_OLD_TEMP = re.compile(r"\.kerasbench-[A-Za-z0-9_]{8}(\.[A-Za-z0-9]+)?")  # before the pid was in the name
OLD_TEMP_AGE = 24 * 3600.0  # seconds: an old-style temporary file this old is no write in progress


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists (another user's too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, not ours
        return True
    return True


def clean_stale_temporaries(directory: str) -> List[str]:
    """Remove the temporary files writes that were killed (kill -9, a power cut) left in `directory`: those of a
    writer no longer running, and old-style ones (no pid in the name) over a day old. Returns the names removed."""
    import time

    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    removed = []
    for entry in entries:
        found = _TEMP.fullmatch(entry.name)
        try:
            if not (found or _OLD_TEMP.fullmatch(entry.name)) or not entry.is_file(follow_symlinks=False):
                continue
            if (not pid_alive(int(found[1])) if found
                    else time.time() - entry.stat(follow_symlinks=False).st_mtime > OLD_TEMP_AGE):
                os.unlink(entry.path)
                removed.append(entry.name)
        except OSError:  # gone already, or not ours to remove
            continue
    return removed


def private_temp_dir() -> str:
    """$TMPDIR/kerasbench-<uid>, this user's private temporary folder (made with mode 0700; one of ours with other
    bits set is made private): where kerasbench.measure's body folders go, so that another user on the machine
    neither reads a body's pickle nor puts one there. Not a folder of ours (a link, another user's): a UsageError."""
    base = os.path.join(tempfile.gettempdir(), f"kerasbench-{os.getuid()}")
    try:
        os.mkdir(base, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise UsageError(f"Cannot make the temporary folder {base}: {e.strerror}; set TMPDIR to a folder of "
                         "yours.") from None
    st = os.lstat(base)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        what = "not a folder" if not stat.S_ISDIR(st.st_mode) else "not yours"
        raise UsageError(f"Cannot use the temporary folder {base}: it is {what}; remove it, or set TMPDIR to a folder "
                         "of yours.")
    if st.st_mode & 0o077:
        os.chmod(base, 0o700)
    return base


def clean_stale_folders(folder: str, prefix: str) -> List[str]:
    """Remove the folders `prefix`<pid>-* in `folder` whose process is gone (a kill -9 left them); their names."""
    import shutil

    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        pid = name[len(prefix):].split("-", 1)[0]
        path = os.path.join(folder, name)
        if name.startswith(prefix) and pid.isdigit() and not pid_alive(int(pid)) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(name)
    return removed


class WriteError(UsageError, OSError):
    """A write that failed on the way (a full disk, a file-size limit, a read-only or lost folder): one line naming
    the file, and that nothing of it was written (the file there before, if any, is as it was). An OSError too, for
    the callers that keep going past a failed write (session.Kept says it and measures on)."""

    def __init__(self, what: str, path: str, error: OSError, existed: bool):
        kept = "the file there before is as it was" if existed else "no file made"
        UsageError.__init__(self, f"Cannot write {what} to {path}: {error.strerror or error}; nothing written, "
                                  f"{kept}.")
        self.errno, self.strerror, self.filename = error.errno, error.strerror, path

    def __str__(self) -> str:
        return str(self.args[0])


def write_text(path: str, text: Union[str, bytes, Callable[[IO], None]], what: str = "results") -> str:
    """Write `text` (or bytes: a pickle; or what a function writes into the open text file) to `path` atomically;
    returns `path`. An existing file keeps its mode. The temporary files killed writes left in that folder go first
    (clean_stale_temporaries). A write that fails (a full disk, `ulimit -f`, a read-only folder) is a WriteError
    naming `path`, the temporary file removed and the file there before left as it was: never half a file."""
    target = _target(path)
    _refuse_special(target, what)
    directory = os.path.dirname(os.path.abspath(target))
    existed = os.path.isfile(target)
    clean_stale_temporaries(directory)
    try:
        _write(target, directory, text)
    except WriteError:
        raise
    except OSError as e:
        raise WriteError(what, path, e, existed) from None
    return path


def _write(target: str, directory: str, text: Union[str, bytes, Callable[[IO], None]]) -> None:
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f"{TEMP_PREFIX}{os.getpid()}-",
                               suffix=os.path.splitext(target)[1] or ".tmp")
    try:
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as f:
            text(f) if callable(text) else f.write(text)
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_umask()  # mkstemp's 0600 would hide a report from a web server or a colleague
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_json(path: str, payload: Any, what: str = "results") -> str:
    """`payload` as indented JSON, written atomically, streamed: a record of a million readings is 130 MB of text
    that json.dumps held whole beside the records (the CLI's peak at 10^6 iterations: mostly that string)."""
    return write_text(path, lambda f: json.dump(payload, f, indent=1, allow_nan=True), what)


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
