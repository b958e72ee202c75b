"""Job files uploaded through the dashboard's "Submit New Job" page (Flink's uploaded
jars): kept in ``web.upload.dir`` (or a temporary directory of the master), each under
an id of its own, until deleted."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

from weir.rest.errors import RestHandlerError

__all__ = ["UploadedJobFile", "UploadedJobFiles"]


@dataclass(frozen=True, slots=True)
class UploadedJobFile:
    id: str
    name: str
    uploaded_ms: int
    path: Path


class UploadedJobFiles:
    """Thread-safe; ``close`` removes the directory when it is a temporary one."""

    def __init__(self, directory: str = "") -> None:
        self._configured = directory
        self._directory: Path | None = None
        self._lock = threading.Lock()

    def _dir(self) -> Path:
        with self._lock:
            if self._directory is None:
                if self._configured:
                    self._directory = Path(self._configured)
                    self._directory.mkdir(parents=True, exist_ok=True)
                else:
                    self._directory = Path(tempfile.mkdtemp(prefix="weir-web-upload-"))
            return self._directory

    def add(self, filename: str, content: bytes) -> UploadedJobFile:
        name = Path(filename).name
        file_id = f"{uuid.uuid4()}_{name}"
        path = self._dir() / file_id
        path.write_bytes(content)
        return self._describe(path)

    @staticmethod
    def _describe(path: Path) -> UploadedJobFile:
        return UploadedJobFile(
            path.name,
            path.name.split("_", 1)[-1],
            int(path.stat().st_mtime * 1000),
            path,
        )

    def list(self) -> list[UploadedJobFile]:
        """Newest first, as Flink lists its jars."""
        files = [self._describe(p) for p in self._dir().iterdir() if p.is_file()]
        return sorted(files, key=lambda f: f.uploaded_ms, reverse=True)

    def get(self, file_id: str) -> UploadedJobFile:
        path = self._dir() / file_id
        if "/" in file_id or file_id.startswith(".") or not path.is_file():
            msg = (
                f"no uploaded job file {file_id!r}: GET /jars lists them, POST /jars/upload "
                "adds one"
            )
            raise RestHandlerError(msg, 404)
        return self._describe(path)

    def delete(self, file_id: str) -> None:
        os.remove(self.get(file_id).path)

    def close(self) -> None:
        with self._lock:
            directory, self._directory = self._directory, None
        if directory is not None and not self._configured:
            shutil.rmtree(directory, ignore_errors=True)
