"""State backends a job can choose (mirrors ``pyflink.datastream.state_backend``).

``env.set_state_backend(...)`` sets ``state.backend.type`` (and, for RocksDB,
``state.backend.incremental`` when given) in the job's configuration, which the
TaskManagers read; the same keys in the cluster's configuration apply when a job sets
none.
"""

from __future__ import annotations

import enum
import urllib.parse
from typing import Any

__all__ = [
    "EmbeddedRocksDBStateBackend",
    "HashMapStateBackend",
    "PredefinedOptions",
    "StateBackend",
]

# Flink's default for state.backend.rocksdb.checkpoint.transfer.thread.num.
_DEFAULT_TRANSFER_THREADS = 4


class StateBackend:
    """Where keyed state lives while a job runs."""

    _type: str = ""

    def _config(self) -> dict[str, str]:
        return {"state.backend.type": self._type}

    def __eq__(self, other: Any) -> bool:
        return type(other) is type(self) and other._config() == self._config()

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._config().items())))


class HashMapStateBackend(StateBackend):
    """Keeps state as Python objects in the TaskManagers' memory: the fastest access,
    bounded by memory (the default).

    Example::

        env.set_state_backend(HashMapStateBackend())
    """

    _type = "hashmap"

    def __repr__(self) -> str:
        return "HashMapStateBackend()"


class PredefinedOptions(enum.Enum):
    """Flink's predefined RocksDB option profiles. Weir records the one chosen and
    reports it back; its RocksDB (rocksdict) keeps its own tuning whichever it is."""

    DEFAULT = 0
    SPINNING_DISK_OPTIMIZED = 1
    SPINNING_DISK_OPTIMIZED_HIGH_MEM = 2
    FLASH_SSD_OPTIMIZED = 3


def _local_path(path: str) -> str:
    """As Flink's setDbStoragePaths: a ``file:`` URI stands for its path (an authority,
    as ``var`` in ``file://var/db``, is not part of it), without a trailing slash."""
    if not path.startswith("file:"):
        return path
    local = urllib.parse.urlparse(path).path
    return local.rstrip("/") or "/"


class EmbeddedRocksDBStateBackend(StateBackend):
    """Keeps state serialized in an embedded RocksDB on each TaskManager's local disk
    (``taskmanager.state.local.root-dirs``): state much larger than memory, at the cost
    of a serialization on every access. With incremental checkpointing a checkpoint
    uploads only the RocksDB files earlier checkpoints did not.

    PyFlink's class, getters and setters: ``set_db_storage_paths`` sets where the
    databases go (``taskmanager.state.local.root-dirs``); the predefined options, the
    options factory and the number of transfer threads are recorded and read back, as
    Weir's RocksDB takes no Java options.

    Example::

        env.set_state_backend(EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True))
    """

    _type = "rocksdb"

    def __init__(
        self,
        enable_incremental_checkpointing: bool | None = None,
        j_embedded_rocks_db_state_backend: Any = None,
    ) -> None:
        """``j_embedded_rocks_db_state_backend`` is PyFlink's internal parameter: there
        is no Java object here, so it must stay None."""
        if enable_incremental_checkpointing not in (None, True, False):
            msg = (
                "Unsupported input for 'enable_incremental_checkpointing': "
                f"{enable_incremental_checkpointing!r}; it must be None, True or False"
            )
            raise TypeError(msg)
        if j_embedded_rocks_db_state_backend is not None:
            msg = (
                "EmbeddedRocksDBStateBackend(j_embedded_rocks_db_state_backend=...) wraps a "
                "Java object, and Weir has none; leave it out"
            )
            raise TypeError(msg)
        self._incremental = enable_incremental_checkpointing
        self._db_storage_paths: list[str] = []
        self._predefined_options = PredefinedOptions.DEFAULT
        self._options_factory: str | None = None
        self._transfer_threads = _DEFAULT_TRANSFER_THREADS

    def is_incremental_checkpoints_enabled(self) -> bool:
        """Whether checkpoints upload only new files (``state.backend.incremental``)."""
        return bool(self._incremental)

    def is_incremental_checkpointing_enabled(self) -> bool:
        """Weir's older name for ``is_incremental_checkpoints_enabled``."""
        return self.is_incremental_checkpoints_enabled()

    def set_db_storage_paths(self, *paths: str) -> None:
        """Where the TaskManagers put their databases (local directories, or ``file:``
        URIs of them); no paths: back to the default, the TaskManager's working
        directory."""
        self._db_storage_paths = [_local_path(p) for p in paths]

    def get_db_storage_paths(self) -> list[str]:
        return list(self._db_storage_paths)

    def set_predefined_options(self, options: PredefinedOptions) -> None:
        if not isinstance(options, PredefinedOptions):
            msg = f"set_predefined_options needs a PredefinedOptions; got {options!r}"
            raise TypeError(msg)
        self._predefined_options = options

    def get_predefined_options(self) -> PredefinedOptions:
        return self._predefined_options

    def set_options(self, options_factory_class_name: str) -> None:
        """Records the name of a Java ``RocksDBOptionsFactory``; Weir's RocksDB cannot
        load it, so it changes nothing but what ``get_options`` returns."""
        self._options_factory = options_factory_class_name

    def get_options(self) -> str | None:
        return self._options_factory

    def get_number_of_transfer_threads(self) -> int:
        return self._transfer_threads

    def set_number_of_transfer_threads(self, number_of_transfering_threads: int) -> None:
        self._transfer_threads = number_of_transfering_threads

    def _config(self) -> dict[str, str]:
        config = super()._config()
        if self._incremental is not None:
            config["state.backend.incremental"] = "true" if self._incremental else "false"
        if self._db_storage_paths:
            config["taskmanager.state.local.root-dirs"] = ",".join(self._db_storage_paths)
        return config

    def __repr__(self) -> str:
        return (
            f"EmbeddedRocksDBStateBackend(enable_incremental_checkpointing={self._incremental!r})"
        )
