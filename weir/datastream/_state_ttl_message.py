"""The message ``StateTtlConfig._to_proto`` makes and ``_from_proto`` reads.

PyFlink round-trips a TTL configuration through the protobuf message its Python workers
receive (``flink_fn_execution_pb2.StateDescriptor.StateTTLConfig``), and its own tests do
so. The user API imports no protobuf, so this message is a plain value with the same
fields and the same enum numbers; it carries what PyFlink's leaves out (the periodic
compaction time of the RocksDB compaction filter), so the round trip loses nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CleanupStrategiesMessage",
    "CleanupStrategyEntry",
    "StateTtlConfigMessage",
]


@dataclass(frozen=True, slots=True)
class CleanupStrategyEntry:
    """One entry of ``CleanupStrategies.strategies``: the strategy's number and its
    settings (none for the full-snapshot strategy)."""

    strategy: int
    cleanup_size: int | None = None
    run_cleanup_for_every_record: bool | None = None
    query_time_after_num_entries: int | None = None
    periodic_compaction_time_ms: int | None = None

    def HasField(self, name: str) -> bool:
        """Which settings the entry holds, under PyFlink's message's field names."""
        if name == "incremental_cleanup_strategy":
            return self.cleanup_size is not None
        if name == "rocksdb_compact_filter_cleanup_strategy":
            return self.query_time_after_num_entries is not None
        if name == "empty_strategy":
            return self.cleanup_size is None and self.query_time_after_num_entries is None
        msg = f"CleanupStrategyEntry has no field {name!r}"
        raise ValueError(msg)


@dataclass(frozen=True, slots=True)
class CleanupStrategiesMessage:
    is_cleanup_in_background: bool
    strategies: tuple[CleanupStrategyEntry, ...]


@dataclass(frozen=True, slots=True)
class StateTtlConfigMessage:
    update_type: int
    state_visibility: int
    ttl_time_characteristic: int
    ttl: int
    """Milliseconds."""
    cleanup_strategies: CleanupStrategiesMessage
