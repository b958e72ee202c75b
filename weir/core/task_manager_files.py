"""A TaskManager's files as clients read them (``weir logs``; Flink's
``/taskmanagers/:id/stdout`` and ``/log``): which file, and what came back."""

from __future__ import annotations

import enum
from dataclasses import dataclass

# One answer carries at most this much of a file's end: gRPC refuses messages over 4 MiB
# by default, and a file's last few MiB are what a user reading it wants.
MAX_UPLOAD_BYTES = 3 * 1024 * 1024


class TaskManagerFileType(enum.Enum):
    """Flink's FileType: ``STDOUT`` is ``taskmanager.out``, ``LOG`` is ``taskmanager.log``."""

    STDOUT = 0
    LOG = 1


@dataclass(frozen=True, slots=True)
class TaskManagerFile:
    content: bytes
    truncated: bool
    """Earlier bytes of the file were left out."""
    path: str
    """Where the file is, on the TaskManager's host."""
