"""The lines of a text file, as ``StreamExecutionEnvironment.read_text_file`` reads them."""

from __future__ import annotations

from typing import Any

import fsspec
from fsspec.core import url_to_fs

from weir.core.java_text import JAVA_ERRORS
from weir.core.local_paths import absolute_local_path
from weir.core.source import SourceReaderContext

_LINES_PER_BATCH = 4096


class TextFileSource:
    """A bounded, non-parallel source of the lines of ``path`` (any fsspec URL), in order,
    without their line endings."""

    def __init__(self, path: str, charset_name: str = "UTF-8") -> None:
        self.path = absolute_local_path(path)
        self.charset_name = charset_name

    def is_bounded(self) -> bool:
        return True

    def estimated_size_bytes(self) -> int:
        """The volume the source reads, for BATCH mode's parallelism: the file's size."""
        fs, root = url_to_fs(self.path)
        return int(fs.size(root) or 0)

    def create_reader(self, context: SourceReaderContext) -> TextFileReader:
        return TextFileReader(
            self.path, self.charset_name, active=context.get_index_of_this_subtask() == 0
        )


class TextFileReader:
    def __init__(self, path: str, charset_name: str, active: bool) -> None:
        self._file: Any = None
        if active:
            try:
                # Malformed input reads as U+FFFD, as Java decodes it.
                self._file = fsspec.open(
                    path, "rt", encoding=charset_name, errors=JAVA_ERRORS, newline=""
                ).open()
            except FileNotFoundError as exc:
                msg = f"read_text_file: no file at {path!r}"
                raise FileNotFoundError(msg) from exc

    def poll_batch(self, max_records: int) -> list[str] | None:
        if self._file is None:
            return None
        lines = []
        for line in self._file:
            lines.append(line.rstrip("\r\n"))
            if len(lines) >= min(max_records, _LINES_PER_BATCH):
                return lines
        self.close()
        return lines or None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
