"""Builds the keyed state backend a job's configuration asks for (Flink's
``StateBackendLoader``): ``state.backend.type`` chooses ``hashmap`` or ``rocksdb``,
``state.backend.incremental`` turns on a rocksdb backend's incremental checkpoints where
the checkpoint storage keeps shared files. A rocksdb backend that cannot be built leaves
no directory behind."""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Callable, Mapping

from weir.core import config
from weir.core.key_groups import PyFlinkKeyHasher
from weir.taskmanager.state.backend import KeyedStateBackend
from weir.taskmanager.state.hashmap import HashMapKeyedStateBackend
from weir.taskmanager.state.rocksdb import RocksDBKeyedStateBackend
from weir.taskmanager.state.rocksdb_layout import create_db_directory

logger = logging.getLogger(__name__)

ROCKSDB_DIR = "weir-rocksdb"


def rocksdb_root(job_config: Mapping[str, str]) -> str:
    """Where a task's rocksdb databases go: ``taskmanager.state.local.root-dirs`` (the
    first), else the task thread's working directory (the job's, deleted with it)."""
    dirs = config.get(job_config, config.STATE_LOCAL_ROOT_DIRS)
    root = dirs.split(",")[0].strip() if dirs else ""
    return os.path.join(os.path.abspath(root or os.getcwd()), ROCKSDB_DIR)


def create_keyed_state_backend(
    job_config: Mapping[str, str],
    *,
    name: str,
    max_parallelism: int,
    key_group_range: range,
    key_hasher: PyFlinkKeyHasher,
    clock_ms: Callable[[], int],
    shared_state: bool,
) -> KeyedStateBackend:
    """The backend of one keyed operator in one subtask. ``name`` names its directory
    (operator and subtask); ``shared_state``: the checkpoint storage keeps shared files."""
    if config.get(job_config, config.STATE_BACKEND_TYPE) != "rocksdb":
        return HashMapKeyedStateBackend(max_parallelism, key_group_range, key_hasher, clock_ms)
    root = rocksdb_root(job_config)
    directory = create_db_directory(root, f"{name}-{uuid.uuid4().hex[:12]}")
    try:
        backend = RocksDBKeyedStateBackend(
            max_parallelism, key_group_range, directory, key_hasher, clock_ms
        )
    except BaseException:
        # The directory is this attempt's alone, and nothing else will remove it: a task
        # restarted after failing here would leave one behind per attempt.
        shutil.rmtree(directory, ignore_errors=True)
        raise
    incremental = config.get(job_config, config.STATE_BACKEND_INCREMENTAL)
    if incremental and not shared_state:
        logger.warning(
            "state.backend.incremental is set but the checkpoint storage keeps no shared "
            "files (execution.checkpointing.storage: jobmanager): taking full checkpoints"
        )
    backend.incremental = incremental and shared_state
    backend.transfer_threads = config.get(job_config, config.ROCKSDB_TRANSFER_THREADS)
    return backend
