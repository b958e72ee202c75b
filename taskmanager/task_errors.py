"""The exception that unwinds a task's thread once it was cancelled."""

from __future__ import annotations

__all__ = ["TaskCanceledError"]


class TaskCanceledError(Exception):
    """Unwinds the task thread after ``cancel()``."""
