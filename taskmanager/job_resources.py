"""What a job holds on a TaskManager, given back when the job leaves it (its last slot
freed and its last task ended here), as Flink's ``TaskExecutor.releaseJobResources``:

- a working directory of its own, ``job_<job id>_*/`` in the TaskManager's, which is the
  current directory of the job's task threads (and of the threads they start): what user
  code writes to a relative path lands there, and is deleted with it. One process hosts
  the tasks of every job, so the directory is per thread: each task thread unshares its
  file-system attributes (Linux ``unshare(CLONE_FS)``) before it changes directory, and
  the process's own directory never changes. Elsewhere, tasks keep the process's
  directory (said once in the log).
- the user modules it imported: imports made on its task threads are recorded (a finder
  at the head of ``sys.meta_path`` that finds nothing itself); when the job leaves, those
  that are the user's own (``weir.core.user_modules``) leave ``sys.modules``, so the next
  job imports them afresh instead of seeing this one's module state. Installed packages
  and the standard library stay loaded: extension modules cannot be loaded twice.

Threading: ``acquire`` and ``detach`` run on the TaskExecutor's RPC threads, under its
lock (a directory made or unlinked from the table); ``release`` afterwards, outside it
(file-system work); ``job_task_thread`` on task threads.
"""

from __future__ import annotations

import ctypes
import gc
import importlib.abc
import logging
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.machinery import ModuleSpec
from types import ModuleType

from weir.core.ids import JobId, parse_job_id
from weir.core.user_modules import is_user_module

logger = logging.getLogger(__name__)

_CLONE_FS = 0x00000200
_local = threading.local()


@dataclass(slots=True)
class JobResources:
    """One job's share of a TaskManager."""

    job_id: JobId
    working_dir: str
    imported: set[str] = field(default_factory=set)


class _ImportRecorder(importlib.abc.MetaPathFinder):
    """Notes the modules imported on a job's task threads; finds nothing itself."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        resources: JobResources | None = getattr(_local, "job", None)
        if resources is not None:
            resources.imported.add(fullname)
        return None


_recorder = _ImportRecorder()
_recorder_lock = threading.Lock()


def _install_recorder() -> None:
    with _recorder_lock:
        if _recorder not in sys.meta_path:
            sys.meta_path.insert(0, _recorder)


_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _unshare_working_directory() -> bool:
    """Give this thread file-system attributes of its own (Linux); False elsewhere."""
    if _libc is None:
        return False
    if _libc.unshare(_CLONE_FS) == 0:
        return True
    logger.warning(
        "unshare(CLONE_FS) failed (%s): tasks use the process's working directory",
        os.strerror(ctypes.get_errno()),
    )
    return False


_warned_shared_directory = False


@contextmanager
def job_task_thread(resources: JobResources) -> Iterator[JobResources]:
    """On a task thread, around the task: the job's directory is the thread's current
    directory and the thread's imports are the job's. Never raises: a task runs in the
    process's directory rather than not at all."""
    global _warned_shared_directory
    if not _unshare_working_directory():
        if not _warned_shared_directory:
            _warned_shared_directory = True
            logger.warning(
                "per-job working directories need Linux: tasks share the TaskManager's "
                "directory; use absolute paths in user code"
            )
    else:
        try:
            os.chdir(resources.working_dir)
        except OSError:  # released under it: the thread keeps the process's directory
            logger.warning(
                "job %s: cannot enter %s", resources.job_id, resources.working_dir, exc_info=True
            )
    _local.job = resources
    try:
        yield resources
    finally:
        _local.job = None


class JobResourceTable:
    """The jobs present on one TaskManager; see the module docstring."""

    def __init__(self, root_dir: str) -> None:
        self._root_dir = root_dir
        self._lock = threading.Lock()
        self._jobs: dict[JobId, JobResources] = {}
        _install_recorder()

    def acquire(self, job_id: JobId) -> JobResources:
        """The job's resources, made when its first task arrives."""
        # Job ids come from the JobMaster, which had them checked when the client
        # submitted the job; this one names a directory, so it is checked again here.
        job_id = parse_job_id(job_id)
        with self._lock:
            resources = self._jobs.get(job_id)
            if resources is None:
                working_dir = tempfile.mkdtemp(prefix=f"job_{job_id}_", dir=self._root_dir)
                resources = self._jobs[job_id] = JobResources(job_id, working_dir)
                logger.info("job %s: working directory %s", job_id, working_dir)
            return resources

    def jobs(self) -> list[JobId]:
        with self._lock:
            return list(self._jobs)

    def detach(self, job_id: JobId) -> JobResources | None:
        """Take the job out of the table (cheap; under the caller's lock). A task of the
        job that starts afterwards gets a new directory."""
        with self._lock:
            return self._jobs.pop(job_id, None)

    @staticmethod
    def release(resources: JobResources) -> None:
        """Delete the directory and unload the user modules of a detached job."""
        shutil.rmtree(resources.working_dir, ignore_errors=True)
        unloaded = []
        for name in sorted(resources.imported):
            module = sys.modules.get(name)
            if module is not None and is_user_module(name, module):
                del sys.modules[name]
                unloaded.append(name)
        # The job's functions and classes form reference cycles; collect them now, so
        # that a class cloudpickle tracks by id cannot be handed to the next job with
        # this one's class attributes.
        gc.collect()
        logger.info(
            "job %s left: working directory deleted, %d user module(s) unloaded%s",
            resources.job_id,
            len(unloaded),
            f" ({', '.join(unloaded)})" if unloaded else "",
        )
