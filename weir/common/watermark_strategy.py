"""``WatermarkStrategy`` and ``TimestampAssigner``: how a source stamps records with event time.

The strategy only records its settings here; the event-time runtime reads them.
"""

from __future__ import annotations

import abc
from typing import Any

from weir.common.time import Duration

__all__ = ["TimestampAssigner", "WatermarkStrategy"]


class TimestampAssigner(abc.ABC):
    """Extracts the event timestamp (epoch ms) of a record."""

    @abc.abstractmethod
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        pass


class WatermarkStrategy:
    """How watermarks are generated and timestamps assigned, as PyFlink's::

        WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5)) \\
            .with_timestamp_assigner(MyAssigner())
    """

    MONOTONOUS = "monotonous"
    BOUNDED_OUT_OF_ORDERNESS = "bounded_out_of_orderness"
    NO_WATERMARKS = "no_watermarks"

    def __init__(self, kind: str, max_out_of_orderness: Duration | None = None) -> None:
        self._kind = kind
        self._max_out_of_orderness = max_out_of_orderness or Duration.of_millis(0)
        self._timestamp_assigner: TimestampAssigner | None = None
        self._idle_timeout: Duration | None = None
        self._alignment: tuple[str, Duration, Duration | None] | None = None

    def with_timestamp_assigner(self, timestamp_assigner: TimestampAssigner) -> WatermarkStrategy:
        self._timestamp_assigner = timestamp_assigner
        return self

    def with_idleness(self, idle_timeout: Duration) -> WatermarkStrategy:
        self._idle_timeout = idle_timeout
        return self

    def with_watermark_alignment(self, watermark_group: str, max_allowed_watermark_drift: Duration,
                                 update_interval: Duration | None = None) -> WatermarkStrategy:
        self._alignment = (watermark_group, max_allowed_watermark_drift, update_interval)
        return self

    @staticmethod
    def for_monotonous_timestamps() -> WatermarkStrategy:
        return WatermarkStrategy(WatermarkStrategy.MONOTONOUS)

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: Duration) -> WatermarkStrategy:
        return WatermarkStrategy(WatermarkStrategy.BOUNDED_OUT_OF_ORDERNESS, max_out_of_orderness)

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        return WatermarkStrategy(WatermarkStrategy.NO_WATERMARKS)

    # What the runtime reads.
    @property
    def kind(self) -> str:
        return self._kind

    @property
    def max_out_of_orderness_ms(self) -> int:
        return self._max_out_of_orderness.to_milliseconds()

    @property
    def timestamp_assigner(self) -> TimestampAssigner | None:
        return self._timestamp_assigner

    @property
    def idle_timeout_ms(self) -> int | None:
        return None if self._idle_timeout is None else self._idle_timeout.to_milliseconds()

    def __repr__(self) -> str:
        return (f"WatermarkStrategy({self._kind}, max_out_of_orderness="
                f"{self.max_out_of_orderness_ms} ms, idle_timeout={self.idle_timeout_ms})")
