"""``StateTtlConfig``: state time-to-live, as ``pyflink.datastream.state.StateTtlConfig``.

PyFlink programs import it from ``weir.datastream.state``, which re-exports it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from weir.common.time import Duration, Time
from weir.datastream._state_ttl_message import (
    CleanupStrategiesMessage,
    CleanupStrategyEntry,
    StateTtlConfigMessage,
)

__all__ = ["StateTtlConfig"]


def _checked_ttl(ttl: Time | Duration) -> Time | Duration:
    # PyFlink 2.3 annotates ``Time``; its ``Duration`` wraps a JVM object and has no
    # ``to_milliseconds``, so a PyFlink program can only pass ``Time``. Ours carries
    # milliseconds too, so we also take it (Flink's Java builder takes a Duration).
    if not isinstance(ttl, (Time, Duration)):
        msg = (
            f"a state TTL must be a Time or a Duration, e.g. Time.seconds(10); "
            f"got {ttl!r} ({type(ttl).__name__})"
        )
        raise TypeError(msg)
    if ttl.to_milliseconds() <= 0:
        msg = (
            f"a state TTL must be positive; got {ttl.to_milliseconds()} ms. "
            "To keep state forever, do not call enable_time_to_live()"
        )
        raise ValueError(msg)
    return ttl


class _NumberedEnum(enum.Enum):
    """An enum that travels as its number, as PyFlink's travel in its protobuf messages."""

    def _to_proto(self) -> int:
        return int(self.value)

    @classmethod
    def _from_proto(cls, proto: int) -> Any:
        return cls(proto)


@dataclass(frozen=True, slots=True, repr=False)
class StateTtlConfig:
    """How long keyed state lives after its last access, and what counts as one.

    A value (a list element, a map entry) expires ``ttl`` after its last access in
    processing time; by default an access is a create or a write, and an expired value
    is never returned (reading it returns nothing and removes it)::

        ttl_config = StateTtlConfig \\
            .new_builder(Time.seconds(1)) \\
            .set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite) \\
            .set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired) \\
            .build()
        descriptor = ValueStateDescriptor("last_seen", Types.LONG())
        descriptor.enable_time_to_live(ttl_config)
    """

    class UpdateType(_NumberedEnum):
        """When the last access timestamp, from which the TTL counts, is set."""

        Disabled = 0
        """No TTL: the state never expires."""
        OnCreateAndWrite = 1
        """Set when the value is created and on every write."""
        OnReadAndWrite = 2
        """As OnCreateAndWrite, and also on every read."""

    class StateVisibility(_NumberedEnum):
        """Whether an expired value that is still stored may be returned."""

        ReturnExpiredIfNotCleanedUp = 0
        """Return it as long as it has not been cleaned up."""
        NeverReturnExpired = 1
        """Never return it: an expired value reads as absent."""

    class TtlTimeCharacteristic(_NumberedEnum):
        """The time the TTL is measured in."""

        ProcessingTime = 0
        """The processing time of the task (its wall clock)."""

    update_type: StateTtlConfig.UpdateType
    state_visibility: StateTtlConfig.StateVisibility
    ttl_time_characteristic: StateTtlConfig.TtlTimeCharacteristic
    ttl: Time | Duration
    cleanup_strategies: StateTtlConfig.CleanupStrategies

    @staticmethod
    def new_builder(ttl: Time | Duration) -> StateTtlConfig.Builder:
        return StateTtlConfig.Builder(ttl)

    def get_update_type(self) -> StateTtlConfig.UpdateType:
        return self.update_type

    def get_state_visibility(self) -> StateTtlConfig.StateVisibility:
        return self.state_visibility

    def get_ttl(self) -> Time | Duration:
        return self.ttl

    def get_ttl_time_characteristic(self) -> StateTtlConfig.TtlTimeCharacteristic:
        return self.ttl_time_characteristic

    def is_enabled(self) -> bool:
        return self.update_type is not StateTtlConfig.UpdateType.Disabled

    def get_cleanup_strategies(self) -> StateTtlConfig.CleanupStrategies:
        return self.cleanup_strategies

    def _to_proto(self) -> StateTtlConfigMessage:
        """This configuration as a message (``_from_proto`` reads it back), as PyFlink's
        ``_to_proto``; see ``weir.datastream._state_ttl_message``."""
        return StateTtlConfigMessage(
            update_type=self.update_type._to_proto(),
            state_visibility=self.state_visibility._to_proto(),
            ttl_time_characteristic=self.ttl_time_characteristic._to_proto(),
            ttl=self.ttl.to_milliseconds(),
            cleanup_strategies=self.cleanup_strategies._to_proto(),
        )

    @staticmethod
    def _from_proto(proto: StateTtlConfigMessage) -> StateTtlConfig:
        builder = (
            StateTtlConfig.new_builder(Time.milliseconds(proto.ttl))
            .set_update_type(StateTtlConfig.UpdateType._from_proto(proto.update_type))
            .set_state_visibility(
                StateTtlConfig.StateVisibility._from_proto(proto.state_visibility)
            )
            .set_ttl_time_characteristic(
                StateTtlConfig.TtlTimeCharacteristic._from_proto(proto.ttl_time_characteristic)
            )
        )
        strategies = StateTtlConfig.CleanupStrategies._from_proto(proto.cleanup_strategies)
        builder._strategies = dict(strategies._strategies)
        builder._is_cleanup_in_background = strategies._is_cleanup_in_background
        return builder.build()

    def __repr__(self) -> str:
        # PyFlink's, spacing included.
        return (
            f"StateTtlConfig<update_type={self.update_type}, "
            f"state_visibility={self.state_visibility},"
            f"ttl_time_characteristic ={self.ttl_time_characteristic},"
            f"ttl={self.ttl}>"
        )

    class Builder:
        """Builds a ``StateTtlConfig``; every setter returns the builder."""

        def __init__(self, ttl: Time | Duration) -> None:
            self._ttl = _checked_ttl(ttl)
            self._update_type = StateTtlConfig.UpdateType.OnCreateAndWrite
            self._state_visibility = StateTtlConfig.StateVisibility.NeverReturnExpired
            self._ttl_time_characteristic = StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
            self._is_cleanup_in_background = True
            self._strategies: dict[
                StateTtlConfig.CleanupStrategies.Strategies,
                StateTtlConfig.CleanupStrategies.CleanupStrategy,
            ] = {}

        def set_update_type(self, update_type: StateTtlConfig.UpdateType) -> StateTtlConfig.Builder:
            """Sets when the last access timestamp, which prolongs the TTL, is updated."""
            self._update_type = update_type
            return self

        def update_ttl_on_create_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)

        def set_state_visibility(
            self, state_visibility: StateTtlConfig.StateVisibility
        ) -> StateTtlConfig.Builder:
            """Sets whether an expired value that is still stored may be returned."""
            self._state_visibility = state_visibility
            return self

        def return_expired_if_not_cleaned_up(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(
                StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
            )

        def never_return_expired(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)

        def set_ttl_time_characteristic(
            self,
            ttl_time_characteristic: StateTtlConfig.TtlTimeCharacteristic,
        ) -> StateTtlConfig.Builder:
            """Sets the time the TTL is measured in (only processing time exists)."""
            self._ttl_time_characteristic = ttl_time_characteristic
            return self

        def use_processing_time(self) -> StateTtlConfig.Builder:
            return self.set_ttl_time_characteristic(
                StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
            )

        def cleanup_full_snapshot(self) -> StateTtlConfig.Builder:
            """Leaves expired values out of full snapshots (checkpoints and savepoints)."""
            self._strategies[
                StateTtlConfig.CleanupStrategies.Strategies.FULL_STATE_SCAN_SNAPSHOT
            ] = StateTtlConfig.CleanupStrategies.EMPTY_STRATEGY
            return self

        def cleanup_incrementally(
            self, cleanup_size: int, run_cleanup_for_every_record: bool
        ) -> StateTtlConfig.Builder:
            """Checks up to ``cleanup_size`` keys for expiry on each state access (and, with
            ``run_cleanup_for_every_record``, on each record). Kept in the config; the
            hashmap backend cleans expired values when they are read."""
            self._strategies[StateTtlConfig.CleanupStrategies.Strategies.INCREMENTAL_CLEANUP] = (
                StateTtlConfig.CleanupStrategies.IncrementalCleanupStrategy(
                    cleanup_size, run_cleanup_for_every_record
                )
            )
            return self

        def cleanup_in_rocksdb_compact_filter(
            self,
            query_time_after_num_entries: int,
            periodic_compaction_time: Duration | None = None,
        ) -> StateTtlConfig.Builder:
            """Drops expired values while RocksDB compacts, reading the current time every
            ``query_time_after_num_entries`` entries. Has no effect on the hashmap backend."""
            self._strategies[
                StateTtlConfig.CleanupStrategies.Strategies.ROCKSDB_COMPACTION_FILTER
            ] = StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy(
                query_time_after_num_entries, periodic_compaction_time
            )
            return self

        def disable_cleanup_in_background(self) -> StateTtlConfig.Builder:
            """Turns off the default background cleanup; strategies set explicitly stay."""
            self._is_cleanup_in_background = False
            return self

        def set_ttl(self, ttl: Time | Duration) -> StateTtlConfig.Builder:
            self._ttl = _checked_ttl(ttl)
            return self

        def build(self) -> StateTtlConfig:
            return StateTtlConfig(
                self._update_type,
                self._state_visibility,
                self._ttl_time_characteristic,
                self._ttl,
                StateTtlConfig.CleanupStrategies(
                    dict(self._strategies), self._is_cleanup_in_background
                ),
            )

    class CleanupStrategies:
        """When expired state is removed. It always is when a read finds it expired; the
        strategies add cleanup in full snapshots, incrementally, or in RocksDB compaction."""

        class Strategies(_NumberedEnum):
            FULL_STATE_SCAN_SNAPSHOT = 0
            INCREMENTAL_CLEANUP = 1
            ROCKSDB_COMPACTION_FILTER = 2

        class CleanupStrategy:
            """Base of the strategies' settings."""

        class EmptyCleanupStrategy(CleanupStrategy):
            """A strategy without settings."""

        class IncrementalCleanupStrategy(CleanupStrategy):
            def __init__(self, cleanup_size: int, run_cleanup_for_every_record: bool) -> None:
                self._cleanup_size = cleanup_size
                self._run_cleanup_for_every_record = run_cleanup_for_every_record

            def get_cleanup_size(self) -> int:
                return self._cleanup_size

            def run_cleanup_for_every_record(self) -> bool:
                return self._run_cleanup_for_every_record

        class RocksdbCompactFilterCleanupStrategy(CleanupStrategy):
            def __init__(
                self,
                query_time_after_num_entries: int,
                periodic_compaction_time: Duration | None = None,
            ) -> None:
                self._query_time_after_num_entries = query_time_after_num_entries
                # Flink's default: a file is compacted, and so filtered, at least monthly.
                self._periodic_compaction_time = periodic_compaction_time or Duration.of_days(30)

            def get_query_time_after_num_entries(self) -> int:
                return self._query_time_after_num_entries

            def get_periodic_compaction_time(self) -> Duration:
                return self._periodic_compaction_time

        EMPTY_STRATEGY = EmptyCleanupStrategy()

        def __init__(
            self,
            strategies: dict[
                StateTtlConfig.CleanupStrategies.Strategies,
                StateTtlConfig.CleanupStrategies.CleanupStrategy,
            ],
            is_cleanup_in_background: bool,
        ) -> None:
            self._strategies = strategies
            self._is_cleanup_in_background = is_cleanup_in_background

        def is_cleanup_in_background(self) -> bool:
            return self._is_cleanup_in_background

        def in_full_snapshot(self) -> bool:
            return (
                StateTtlConfig.CleanupStrategies.Strategies.FULL_STATE_SCAN_SNAPSHOT
                in self._strategies
            )

        def get_incremental_cleanup_strategy(
            self,
        ) -> StateTtlConfig.CleanupStrategies.IncrementalCleanupStrategy | None:
            """The explicit one, else Flink's background default (5 keys per access)."""
            default = (
                StateTtlConfig.CleanupStrategies.IncrementalCleanupStrategy(5, False)
                if self._is_cleanup_in_background
                else None
            )
            found = self._strategies.get(
                StateTtlConfig.CleanupStrategies.Strategies.INCREMENTAL_CLEANUP, default
            )
            assert found is None or isinstance(  # only the builder fills it
                found, StateTtlConfig.CleanupStrategies.IncrementalCleanupStrategy
            )
            return found

        def get_rocksdb_compact_filter_cleanup_strategy(
            self,
        ) -> StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy | None:
            """The explicit one, else Flink's background default (1000 entries)."""
            default = (
                StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy(1000)
                if self._is_cleanup_in_background
                else None
            )
            found = self._strategies.get(
                StateTtlConfig.CleanupStrategies.Strategies.ROCKSDB_COMPACTION_FILTER, default
            )
            assert found is None or isinstance(  # only the builder fills it
                found, StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy
            )
            return found

        def _to_proto(self) -> CleanupStrategiesMessage:
            kinds = StateTtlConfig.CleanupStrategies
            entries = []
            for strategy, settings in self._strategies.items():
                number = strategy._to_proto()
                if isinstance(settings, kinds.IncrementalCleanupStrategy):
                    entry = CleanupStrategyEntry(
                        number,
                        cleanup_size=settings.get_cleanup_size(),
                        run_cleanup_for_every_record=settings.run_cleanup_for_every_record(),
                    )
                elif isinstance(settings, kinds.RocksdbCompactFilterCleanupStrategy):
                    entry = CleanupStrategyEntry(
                        number,
                        query_time_after_num_entries=settings.get_query_time_after_num_entries(),
                        periodic_compaction_time_ms=(
                            settings.get_periodic_compaction_time().to_milliseconds()
                        ),
                    )
                else:
                    entry = CleanupStrategyEntry(number)
                entries.append(entry)
            return CleanupStrategiesMessage(self._is_cleanup_in_background, tuple(entries))

        @staticmethod
        def _from_proto(proto: CleanupStrategiesMessage) -> StateTtlConfig.CleanupStrategies:
            kinds = StateTtlConfig.CleanupStrategies
            strategies: dict[
                StateTtlConfig.CleanupStrategies.Strategies,
                StateTtlConfig.CleanupStrategies.CleanupStrategy,
            ] = {}
            for entry in proto.strategies:
                strategy = kinds.Strategies._from_proto(entry.strategy)
                settings: StateTtlConfig.CleanupStrategies.CleanupStrategy
                if entry.cleanup_size is not None:
                    settings = kinds.IncrementalCleanupStrategy(
                        entry.cleanup_size, bool(entry.run_cleanup_for_every_record)
                    )
                elif entry.query_time_after_num_entries is not None:
                    periodic = entry.periodic_compaction_time_ms
                    settings = kinds.RocksdbCompactFilterCleanupStrategy(
                        entry.query_time_after_num_entries,
                        None if periodic is None else Duration.of_millis(periodic),
                    )
                else:
                    settings = kinds.EMPTY_STRATEGY
                strategies[strategy] = settings
            return kinds(strategies, proto.is_cleanup_in_background)

        def __eq__(self, other: object) -> bool:
            return (
                isinstance(other, StateTtlConfig.CleanupStrategies)
                and other._strategies.keys() == self._strategies.keys()
                and other._is_cleanup_in_background == self._is_cleanup_in_background
            )

        def __hash__(self) -> int:
            return hash((frozenset(self._strategies), self._is_cleanup_in_background))
