"""``WatermarkStrategy`` and ``TimestampAssigner``: how a stream gets event time.

The strategy records its settings; the TaskManager builds the generator from it
(``create_watermark_generator``) where records are stamped: in the source task of
``from_source(source, strategy, name)`` and in ``assign_timestamps_and_watermarks``.
Beyond PyFlink, ``WatermarkStrategy.for_generator`` takes a custom
``WatermarkGenerator`` (periodic or punctuated), as Java's ``forGenerator`` does.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

from weir.common.time import Duration
from weir.core.watermarks import (
    BoundedOutOfOrdernessWatermarks,
    NoWatermarksGenerator,
    Watermark,
    WatermarkGenerator,
    WatermarkOutput,
    WatermarksWithIdleness,
)

__all__ = [
    "TimestampAssigner",
    "Watermark",
    "WatermarkGenerator",
    "WatermarkOutput",
    "WatermarkStrategy",
]


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
    CUSTOM = "custom"

    def __init__(
        self,
        kind: str,
        max_out_of_orderness: Duration | None = None,
        generator_supplier: Callable[[], WatermarkGenerator] | None = None,
    ) -> None:
        self._kind = kind
        self._generator_supplier = generator_supplier
        self._max_out_of_orderness = max_out_of_orderness or Duration.of_millis(0)
        self._timestamp_assigner: TimestampAssigner | None = None
        self._idle_timeout: Duration | None = None
        self._alignment: tuple[str, Duration, Duration | None] | None = None

    def with_timestamp_assigner(self, timestamp_assigner: TimestampAssigner) -> WatermarkStrategy:
        """Sets the assigner on this strategy and returns it, as PyFlink's does (the one
        ``with_*`` method that changes the strategy it is called on)."""
        self._timestamp_assigner = timestamp_assigner
        return self

    def with_idleness(self, idle_timeout: Duration) -> WatermarkStrategy:
        """A new strategy that also marks a stream idle after ``idle_timeout`` without
        records; this one is left as it was.

        As in PyFlink, the new strategy has no timestamp assigner of its own (PyFlink's
        assigner lives on its Python object, which the new one does not copy): give it
        one after ``with_idleness``, or records keep the timestamps they have::

            WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(20)) \\
                .with_idleness(Duration.of_minutes(1)) \\
                .with_timestamp_assigner(MyAssigner())
        """
        return self._derived(idle_timeout=idle_timeout)

    def with_watermark_alignment(
        self,
        watermark_group: str,
        max_allowed_watermark_drift: Duration,
        update_interval: Duration | None = None,
    ) -> WatermarkStrategy:
        """A new strategy with watermark alignment configured; this one is left as it
        was, and, as with ``with_idleness``, the new one has no timestamp assigner."""
        return self._derived(
            alignment=(watermark_group, max_allowed_watermark_drift, update_interval)
        )

    def _snapshot(self) -> WatermarkStrategy:
        """A copy as the strategy is now, assigner included: what a stream keeps when it is
        given the strategy, so later ``with_timestamp_assigner`` calls on the strategy do
        not reach streams built before them (PyFlink reads the assigner at that call)."""
        copy = self._derived()
        copy._timestamp_assigner = self._timestamp_assigner
        return copy

    def _derived(self, **changes: Any) -> WatermarkStrategy:
        derived = WatermarkStrategy(
            self._kind, self._max_out_of_orderness, self._generator_supplier
        )
        derived._idle_timeout = changes.get("idle_timeout", self._idle_timeout)
        derived._alignment = changes.get("alignment", self._alignment)
        return derived

    @staticmethod
    def for_monotonous_timestamps() -> WatermarkStrategy:
        return WatermarkStrategy(WatermarkStrategy.MONOTONOUS)

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: Duration) -> WatermarkStrategy:
        return WatermarkStrategy(WatermarkStrategy.BOUNDED_OUT_OF_ORDERNESS, max_out_of_orderness)

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        return WatermarkStrategy(WatermarkStrategy.NO_WATERMARKS)

    @staticmethod
    def for_generator(generator_supplier: Callable[[], WatermarkGenerator]) -> WatermarkStrategy:
        """A custom generator: ``generator_supplier()`` is called once per parallel
        instance and returns a ``WatermarkGenerator``."""
        if not callable(generator_supplier):
            msg = (
                "for_generator() needs a callable returning a WatermarkGenerator, e.g. "
                "WatermarkStrategy.for_generator(lambda: MyGenerator())"
            )
            raise TypeError(msg)
        return WatermarkStrategy(WatermarkStrategy.CUSTOM, generator_supplier=generator_supplier)

    def create_watermark_generator(self, clock_ms: Callable[[], int]) -> WatermarkGenerator:
        """A fresh generator for one parallel instance (``clock_ms``: processing time,
        for idleness)."""
        generator: WatermarkGenerator
        if self._kind == WatermarkStrategy.NO_WATERMARKS:
            generator = NoWatermarksGenerator()
        elif self._kind == WatermarkStrategy.CUSTOM:
            assert self._generator_supplier is not None
            generator = self._generator_supplier()
            if not isinstance(generator, WatermarkGenerator) and not (
                callable(getattr(generator, "on_event", None))
                and callable(getattr(generator, "on_periodic_emit", None))
            ):
                msg = (
                    f"the generator supplier returned {generator!r}; it must return a "
                    "WatermarkGenerator (with on_event and on_periodic_emit)"
                )
                raise TypeError(msg)
        else:
            monotonous = self._kind == WatermarkStrategy.MONOTONOUS
            bound = 0 if monotonous else self.max_out_of_orderness_ms
            generator = BoundedOutOfOrdernessWatermarks(bound)
        idle = self.idle_timeout_ms
        if idle is not None and idle > 0:
            generator = WatermarksWithIdleness(generator, idle, clock_ms)
        return generator

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
        return (
            f"WatermarkStrategy({self._kind}, max_out_of_orderness="
            f"{self.max_out_of_orderness_ms} ms, idle_timeout={self.idle_timeout_ms})"
        )
