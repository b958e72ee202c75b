"""The keyed state backend abstraction: per-key state behind ``RuntimeContext.get_state``.

A keyed operator sets the backend's current key once per record (``current_key``),
then user code reads and writes state objects bound to the backend; every access
resolves against that key. Backends are used by exactly one task thread, so they
take no locks.

Extension points, for the backends and features that plug in later:

- ``rocksdb``: a second implementation of ``KeyedStateBackend`` whose states
  serialize the current key (with its key-group prefix) on access.
- snapshots: ``snapshot()`` captures the state synchronously on the task thread,
  grouped by key group so that a restore at another parallelism can take whole
  key groups; the asynchronous write is the caller's business.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from weir.core.errors import WeirError
from weir.core.key_groups import PyFlinkKeyHasher
from weir.core.state_ttl import StateTtl


class StateAccessError(WeirError, RuntimeError):
    """Keyed state was used where there is no key (a non-keyed operator or no record)."""


class ValueState(Protocol):
    """PyFlink's ValueState: one value per key (``None`` when unset)."""

    def value(self) -> Any: ...

    def update(self, value: Any) -> None: ...

    def clear(self) -> None: ...


@dataclass(frozen=True, slots=True)
class KeyedStateSnapshot:
    """State of one backend, as ``{state_name: {key_group: {key: value}}}``."""

    max_parallelism: int
    states: Mapping[str, Mapping[int, Mapping[Any, Any]]]


class KeyedStateBackend(abc.ABC):
    """Per-key state of one operator in one subtask.

    ``current_key`` is a plain attribute on purpose: the keyed operators set it once
    per record, and an attribute store is the cheapest way to do so in Python.
    """

    current_key: Any

    def __init__(
        self,
        max_parallelism: int,
        key_group_range: range,
        key_hasher: PyFlinkKeyHasher | None = None,
    ) -> None:
        self.max_parallelism = max_parallelism
        self.key_group_range = key_group_range
        # The same key -> key group function the senders route with.
        self.key_hasher = key_hasher or PyFlinkKeyHasher()
        self.current_key = None

    def key_group_of(self, key: Any) -> int:
        return self.key_hasher.key_group(key, self.max_parallelism)

    def set_current_key(self, key: Any) -> None:
        self.current_key = key

    def get_current_key(self) -> Any:
        return self.current_key

    # Each ``get_*_state`` returns the same object on every call with that name. With a
    # ``ttl`` the state's values expire as it says (see ``weir.core.state_ttl``); without
    # one they live until cleared.

    @abc.abstractmethod
    def get_value_state(self, name: str, ttl: StateTtl | None = None) -> ValueState:
        """The ValueState called ``name``."""

    @abc.abstractmethod
    def get_list_state(self, name: str, ttl: StateTtl | None = None) -> Any:
        """The ListState called ``name``."""

    @abc.abstractmethod
    def get_map_state(self, name: str, ttl: StateTtl | None = None) -> Any:
        """The MapState called ``name``."""

    @abc.abstractmethod
    def get_reducing_state(
        self, name: str, reduce: Callable[[Any, Any], Any], ttl: StateTtl | None = None
    ) -> Any:
        """The ReducingState called ``name``, folding with ``reduce``."""

    @abc.abstractmethod
    def get_aggregating_state(self, name: str, function: Any, ttl: StateTtl | None = None) -> Any:
        """The AggregatingState called ``name``, with an AggregateFunction."""

    @abc.abstractmethod
    def get_raw_table(self, name: str) -> dict[Any, Any]:
        """The runtime's own per-key table ``name`` (``{key: value}``), snapshotted and
        restored with the user's state (timers, window contents). Names start with
        ``_weir_``; the runtime reads and writes the dict directly, on the task thread."""

    def get_keys(self, name: str) -> list[Any]:
        """The keys that have a value in state ``name`` in this backend (Flink's
        ``getKeys``), for ``apply_to_keyed_state``. This default reads a snapshot; a
        backend that stores a state under another name (TTL) or can list keys cheaper
        overrides it."""
        groups = self.snapshot().states.get(name) or {}
        return [key for entries in groups.values() for key in entries]

    @abc.abstractmethod
    def snapshot(self) -> KeyedStateSnapshot:
        """Capture every state, grouped by key group (task thread; synchronous part)."""

    @abc.abstractmethod
    def restore(self, snapshots: list[KeyedStateSnapshot]) -> None:
        """Load the key groups of ``key_group_range`` from snapshots (before any record)."""

    def dispose(self) -> None:  # noqa: B027 - optional hook, heap state needs nothing
        """Release resources (files, handles). Idempotent."""
