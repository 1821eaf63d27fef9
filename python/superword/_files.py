"""Writing files so that a crash, a kill or a second writer never leaves half a file.

Every file superword writes (model files, their provenance sidecars, tiktoken ranks, minbpe
files) goes through :func:`write_text_atomic`:

* The text goes to a temporary file in the target's folder, named
  ``.NAME.superword-HOST-PID-RANDOM.tmp``, which is flushed to disk and then renamed over the
  target: a reader sees the old file or the new one, never a part, and a ``kill -9`` during
  the write leaves the old file as it was.  Two threads or processes saving to one path each
  use their own temporary name; the last rename wins.
* A temporary file survives only a hard kill.  The next save to the same path removes those
  left by processes of this host that no longer run (POSIX only).
* The target must be a regular file or absent.  A folder, FIFO, device node or socket is
  refused (a rename would replace ``/dev/null`` itself).  A symbolic link is written through
  deliberately: the file it points to is replaced and the link stays a link.
* A new file gets the usual permissions (0666 less the umask); a replaced file keeps its
  permission bits.
* A folder that is missing (or is a file) is named in the error, not the temporary file
  that could not be made in it.

The command line also calls :func:`check_target` for every file it will write before it
starts (so a typo in ``-o`` does not cost a training run), and :func:`refuse_overwriting`
so that no command replaces a file it reads.
"""
from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import secrets
import socket
import stat
from collections.abc import Iterable

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _host() -> str:
    """A short stable tag of this machine, so that a shared folder's stale temporary files are
    only judged by the host that made them."""
    return hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def target_of(path: str | os.PathLike[str]) -> tuple[str, os.stat_result | None]:
    """The file a write to ``path`` replaces (a symlink resolved) and its status (``None`` when
    absent).  Raises ``ValueError`` naming ``path`` when it is not a regular file."""
    path = os.fspath(path)
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except (FileNotFoundError, NotADirectoryError):  # the folder's trouble is named on writing
        return real, None
    for test, kind in _KINDS:
        if test(st.st_mode):
            shown = path if real == os.path.abspath(path) else f"{path} (a link to {real})"
            if kind == "a folder":
                raise IsADirectoryError(f"{shown} is a folder; give a file name to write")
            raise ValueError(f"{shown} is {kind}, not a regular file; superword only writes "
                             f"regular files (they are replaced atomically)")
    return real, st


def _missing_folder(path: str, real: str) -> OSError | None:
    """The error for a target whose folder is missing or is not a folder (named as the user
    gave it), else ``None``."""
    shown = os.path.dirname(path) or "."
    folder = os.path.dirname(real)
    if not os.path.exists(folder):
        return FileNotFoundError(f"cannot write {path}: the folder {shown} does not exist")
    if not os.path.isdir(folder):
        return NotADirectoryError(f"cannot write {path}: {shown} is not a folder")
    return None


def check_target(path: str | os.PathLike[str]) -> None:
    """Raise the error a write to ``path`` would meet because of the target or its folder
    (a folder or device at ``path``, a missing folder), before any work is spent on it."""
    real, _ = target_of(path)
    error = _missing_folder(os.fspath(path), real)
    if error is not None:
        raise error


def refuse_overwriting(outputs: Iterable[str], inputs: Iterable[str]) -> None:
    """Raise ``ValueError`` when a file in ``outputs`` is one of ``inputs`` (the same file,
    whatever the names: links count).  A command whose output replaced one of its inputs
    would lose what it read, and a sidecar written over an input is no better."""
    seen: dict[tuple[int, int], str] = {}
    for name in inputs:
        key = _identity(name)
        if key is not None:
            seen.setdefault(key, name)
    for out in outputs:
        key = _identity(out)
        if key is not None and key in seen:
            raise ValueError(f"writing {out} would replace the input {seen[key]} (the same file); "
                             f"choose another output name")


def _identity(name: str) -> tuple[int, int] | None:
    """(device, inode) of an existing regular file (links followed), else ``None``."""
    if name == "-":
        return None
    try:
        st = os.stat(name)
    except (OSError, ValueError):  # absent, unreadable folder, or a NUL in the name
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _remove_stale(folder: str, name: str) -> None:
    """Remove temporary files of ``name`` left by killed processes of this host."""
    if os.name != "posix":  # os.kill(pid, 0) is only a liveness probe on POSIX
        return
    prefix = f".{name}.superword-{_host()}-"
    for tmp in glob.glob(os.path.join(glob.escape(folder), glob.escape(prefix) + "*.tmp")):
        pid_text = os.path.basename(tmp)[len(prefix):].split("-", 1)[0]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:  # that process is gone: its temporary file is garbage
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        except OSError:  # alive (PermissionError: someone else's) or unknowable: leave it
            pass


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` line ends) to ``path`` atomically; see the module notes."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    real, st = target_of(path)
    folder, name = os.path.split(real)
    _remove_stale(folder, name)
    tmp = os.path.join(folder, f".{name}.superword-{_host()}-{os.getpid()}-{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    except OSError as exc:
        # name the folder or the target, not the temporary file the user never asked for
        raise _missing_folder(os.fspath(path), real) or type(exc)(
            f"cannot write {os.fspath(path)}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            if st is not None:
                os.chmod(tmp, stat.S_IMODE(st.st_mode))
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
