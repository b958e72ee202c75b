"""``TimerService``: current times and timer registration (implemented by the task)."""

from __future__ import annotations

import abc

__all__ = ["TimerService"]


class TimerService(abc.ABC):
    @abc.abstractmethod
    def current_processing_time(self) -> int:
        pass

    @abc.abstractmethod
    def current_watermark(self) -> int:
        pass

    @abc.abstractmethod
    def register_processing_time_timer(self, timestamp: int) -> None:
        pass

    @abc.abstractmethod
    def register_event_time_timer(self, timestamp: int) -> None:
        pass

    @abc.abstractmethod
    def delete_processing_time_timer(self, timestamp: int) -> None:
        pass

    @abc.abstractmethod
    def delete_event_time_timer(self, timestamp: int) -> None:
        pass
