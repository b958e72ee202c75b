"""``Duration``, ``Time`` and ``Instant``: PyFlink's spans and points in time, in milliseconds."""

from __future__ import annotations

from typing import Any

__all__ = ["Duration", "Instant", "Time"]


class Duration:
    """A span of time (java.time.Duration), e.g. ``Duration.of_seconds(5)``."""

    def __init__(self, millis: int) -> None:
        self._millis = int(millis)

    @staticmethod
    def of_millis(millis: int) -> Duration:
        return Duration(millis)

    @staticmethod
    def of_seconds(seconds: int) -> Duration:
        return Duration(seconds * 1000)

    @staticmethod
    def of_minutes(minutes: int) -> Duration:
        return Duration(minutes * 60_000)

    @staticmethod
    def of_hours(hours: int) -> Duration:
        return Duration(hours * 3_600_000)

    @staticmethod
    def of_days(days: int) -> Duration:
        return Duration(days * 86_400_000)

    @staticmethod
    def of_nanos(nanos: int) -> Duration:
        return Duration(nanos // 1_000_000)

    def to_milliseconds(self) -> int:
        return self._millis

    def to_nanos(self) -> int:
        return self._millis * 1_000_000

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Duration) and other._millis == self._millis

    def __hash__(self) -> int:
        return hash(("Duration", self._millis))

    # No __repr__ or __str__: PyFlink's Duration (a JVM object's wrapper) has neither, and
    # programs print what holds one (StateTtlConfig, CheckpointConfig values) as PyFlink
    # prints it.


class Time:
    """A span of time for windows and restart strategies, e.g. ``Time.seconds(10)``."""

    def __init__(self, milliseconds: int) -> None:
        self._milliseconds = int(milliseconds)

    def to_milliseconds(self) -> int:
        return self._milliseconds

    @staticmethod
    def milliseconds(milliseconds: int) -> Time:
        return Time(milliseconds)

    @staticmethod
    def seconds(seconds: int) -> Time:
        return Time(seconds * 1000)

    @staticmethod
    def minutes(minutes: int) -> Time:
        return Time(minutes * 60_000)

    @staticmethod
    def hours(hours: int) -> Time:
        return Time(hours * 3_600_000)

    @staticmethod
    def days(days: int) -> Time:
        return Time(days * 86_400_000)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Time) and other._milliseconds == self._milliseconds

    def __hash__(self) -> int:
        return hash(("Time", self._milliseconds))

    def __str__(self) -> str:
        # PyFlink's; its repr is object's, as here.
        return f"{self._milliseconds} ms"


class Instant:
    """A point in time as seconds and nanoseconds since the epoch."""

    def __init__(self, seconds: int, nanos: int) -> None:
        self.seconds = seconds
        self.nanos = nanos

    def to_epoch_milli(self) -> int:
        return self.seconds * 1000 + self.nanos // 1_000_000

    @staticmethod
    def of_epoch_milli(epoch_milli: int) -> Instant:
        secs, millis = divmod(epoch_milli, 1000)
        return Instant(secs, millis * 1_000_000)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Instant) and (self.seconds, self.nanos) == (
            other.seconds,
            other.nanos,
        )

    def __hash__(self) -> int:
        return hash((self.seconds, self.nanos))

    def __repr__(self) -> str:
        return f"Instant<{self.seconds}, {self.nanos}>"
