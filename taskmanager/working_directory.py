"""A TaskManager's working directory, and the removal of those whose TaskManager died.

A TaskManager keeps its jobs' files, their RocksDB instances and spilled state in a
directory of its own, and deletes it when it closes. One that is killed (SIGKILL from the
OOM killer or an operator, Spark killing its Python worker) cannot: its directory would
stay for good. So every working directory holds a lock file that its TaskManager keeps
``flock``-ed for its whole life; the kernel lets go of the lock when the process ends,
however it ends. A TaskManager starting in the same temporary root removes each sibling
whose lock it can take: no live TaskManager holds it.

A directory is created under a hidden name, locked, and only then renamed to the name
others look for, so no one ever finds it unlocked while its TaskManager lives.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import stat
import tempfile

__all__ = ["WorkingDirectory", "remove_abandoned"]

logger = logging.getLogger(__name__)

PREFIX = "weir-tm-"
LOCK_FILE = ".owner.lock"


class WorkingDirectory:
    """A locked working directory; ``close`` deletes it."""

    def __init__(self, path: str, lock_fd: int) -> None:
        self.path = path
        self._lock_fd = lock_fd

    @classmethod
    def create(cls, resource_id: str, root: str | None = None) -> WorkingDirectory:
        root = root or tempfile.gettempdir()
        staging = tempfile.mkdtemp(prefix=f".{PREFIX}{resource_id[:8]}-", dir=root)
        fd = os.open(os.path.join(staging, LOCK_FILE), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            path = os.path.join(root, os.path.basename(staging)[1:])
            os.rename(staging, path)  # onto no existing name: mkdtemp's suffix is unique
        except BaseException:
            os.close(fd)
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return cls(path, fd)

    def close(self) -> None:
        """Delete the directory, then let go of its lock. Idempotent."""
        if self._lock_fd < 0:
            return
        shutil.rmtree(self.path, ignore_errors=True)
        os.close(self._lock_fd)
        self._lock_fd = -1


def remove_abandoned(root: str | None = None) -> list[str]:
    """Delete the working directories in ``root`` whose TaskManager has ended; returns
    them. A directory without a lock file (an older layout, or another program's) is
    left alone, and so are links and other users' directories."""
    root = root or tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(root) if n.startswith(PREFIX)]
    except OSError:
        return []
    removed = []
    for name in names:
        path = os.path.join(root, name)
        try:
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
                continue  # a link, or another user's: never followed or touched
            fd = os.open(os.path.join(path, LOCK_FILE), os.O_RDWR | os.O_NOFOLLOW)
        except OSError:  # no lock file, or removed meanwhile
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its TaskManager is alive
            except OSError:
                continue  # a file system without locks: nothing can be told
            if _remove_locked(path):
                removed.append(path)
        finally:
            os.close(fd)
    if removed:
        logger.info(
            "removed %d working directories of TaskManagers that ended without closing: %s",
            len(removed),
            ", ".join(removed),
        )
    return removed


def _remove_locked(path: str) -> bool:
    """Everything but the lock file first, then the lock file and the directory: one
    interrupted half-way still has its lock file, and the next start finishes it."""
    try:
        entries = os.listdir(path)
    except FileNotFoundError:
        return False  # another starting TaskManager removed it first
    for name in entries:
        if name == LOCK_FILE:
            continue
        entry = os.path.join(path, name)
        if os.path.isdir(entry) and not os.path.islink(entry):
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(path, LOCK_FILE))
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True
