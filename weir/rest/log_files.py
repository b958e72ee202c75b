"""Log files the REST API serves (the master's and the TaskManagers'): the end of one
file, and the list of a directory's files, in Flink's shapes."""

from __future__ import annotations

import os
from typing import Any

from weir.rest.errors import RestHandlerError
from weir.rest.routes import RestResponse

__all__ = ["LOG_TAIL_BYTES", "list_log_files", "read_log_file"]

# A log file is served from its end: at most this much of it (the page shows the tail).
LOG_TAIL_BYTES = 1 << 20


def list_log_files(directory: str) -> list[dict[str, Any]]:
    """Flink's LogInfo of every file in ``directory`` (none when it does not exist)."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except FileNotFoundError:
        return []
    found = []
    for entry in entries:
        if entry.is_file():
            stat = entry.stat()
            found.append(
                {"name": entry.name, "size": stat.st_size, "mtime": int(stat.st_mtime * 1000)}
            )
    return found


def read_log_file(directory: str, name: str, where: str) -> RestResponse:
    """The last ``LOG_TAIL_BYTES`` of ``directory/name`` as text. ``name`` is a file of
    that directory, never a path; a missing file is a 404 saying ``where`` it may be."""
    if not name or "/" in name or "\x00" in name or name.startswith("."):
        msg = f"{name!r} is not a log file name: GET .../logs lists the files there are"
        raise RestHandlerError(msg, 400)
    path = os.path.join(directory, name)
    try:
        with open(path, "rb") as file:
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - LOG_TAIL_BYTES))
            data = file.read()
    except FileNotFoundError:
        msg = f"{path} does not exist on the master's host; {where}"
        raise RestHandlerError(msg, 404) from None
    return RestResponse(data.decode("utf-8", "replace"), content_type="text/plain")
