"""State backends a job can choose (mirrors ``pyflink.datastream.state_backend``).

``env.set_state_backend(...)`` sets ``state.backend.type`` (and, for RocksDB,
``state.backend.incremental`` when given) in the job's configuration, which the
TaskManagers read; the same keys in the cluster's configuration apply when a job sets
none.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EmbeddedRocksDBStateBackend", "HashMapStateBackend", "StateBackend"]


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


class EmbeddedRocksDBStateBackend(StateBackend):
    """Keeps state serialized in an embedded RocksDB on each TaskManager's local disk
    (``taskmanager.state.local.root-dirs``): state much larger than memory, at the cost
    of a serialization on every access. With incremental checkpointing a checkpoint
    uploads only the RocksDB files earlier checkpoints did not.

    Example::

        env.set_state_backend(EmbeddedRocksDBStateBackend(enable_incremental_checkpointing=True))
    """

    _type = "rocksdb"

    def __init__(self, enable_incremental_checkpointing: bool | None = None) -> None:
        self._incremental = enable_incremental_checkpointing

    def is_incremental_checkpointing_enabled(self) -> bool:
        return bool(self._incremental)

    def _config(self) -> dict[str, str]:
        config = super()._config()
        if self._incremental is not None:
            config["state.backend.incremental"] = "true" if self._incremental else "false"
        return config

    def __repr__(self) -> str:
        return (
            f"EmbeddedRocksDBStateBackend(enable_incremental_checkpointing={self._incremental!r})"
        )
