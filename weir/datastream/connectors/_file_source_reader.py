"""The reader behind ``FileSource``: file discovery, split assignment, and reading each
file through its format (text lines here; CSV and Parquet in ``weir.datastream.formats``).

A format reads a file split through a ``SplitReader`` it opens (``SplitFormat``); the
split's ``offset`` and ``lines`` are its position, as Flink's ``CheckpointedPosition``
(an offset to resume at, records to skip after it), which each format defines: text, the
byte offset of the next line and the lines consumed; CSV, 0 and the data records
consumed; Parquet, the row group and the rows consumed in it.

A reader's state is its splits (``FileSourceReader.snapshot_splits``), so a checkpoint of
it is restored at any parallelism:

- a file split per file not finished: ``(path, offset, lines)`` as its format keeps them;
- monitoring continuously, a discovery split per class of paths the reader discovers:
  ``("discovery", index, parallelism, paths)`` stands for the files whose path hashes to
  ``index`` among ``parallelism`` (``owner_of``) and names those already discovered.
  A fresh reader holds its own class; after a restore at another parallelism the
  classes of the first run are dealt out like the file splits, so every new file is
  discovered by exactly one reader, and none is read twice. Discovery then runs on as
  many readers as the first run had (or fewer), while every reader reads the file
  splits it is given.
"""

from __future__ import annotations

import collections
import json
import logging
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any, Protocol

import fsspec
from fsspec.core import url_to_fs

from weir.core.columnar import as_records
from weir.core.java_text import JAVA_ERRORS, JavaCharset
from weir.core.source import SourceStateError

logger = logging.getLogger(__name__)

# Lines handed over per poll at most, so one poll stays within a few milliseconds.
_LINES_PER_BATCH = 4096

# The first element of a discovery split (a file split starts with its path, a URL).
_DISCOVERY = "discovery"


@dataclass(slots=True)
class FileSplit:
    """One file and the position in it: ``offset`` and ``lines``, as its format keeps them
    (the module docstring)."""

    path: str
    offset: int = 0
    lines: int = 0


class SplitReader(Protocol):
    """Reads one file split from its position, and keeps the position of the split it
    was opened on after every ``read`` (task thread only)."""

    def read(self, limit: int) -> Sequence[Any] | None:
        """Up to ``limit`` records (a list, or a ColumnBatch where the format is columnar),
        at least one; None at the end of the file."""
        ...

    def close(self) -> None: ...


class SplitFormat(Protocol):
    """A format ``FileSource`` reads files with: it opens a reader of one split. A
    ``columnar`` format's reads are ColumnBatches."""

    columnar: bool

    def open_split(self, split: FileSplit) -> SplitReader: ...


def owner_of(path: str, parallelism: int) -> int:
    """The subtask that reads ``path``: a hash every subtask computes alike (also for files
    found later while monitoring), stable across processes and runs."""
    return zlib.crc32(path.encode("utf-8")) % parallelism


def _hidden(relative: str) -> bool:
    # Flink's DefaultFileFilter: files and directories starting with '.' or '_' are hidden
    return any(part.startswith((".", "_")) for part in relative.split("/") if part)


def enumerate_files(paths: tuple[str, ...]) -> list[str]:
    """Every file under ``paths`` (files as given, directories recursively without hidden
    entries), as full fsspec URLs, sorted."""
    found: set[str] = set()
    for url in paths:
        fs, root = url_to_fs(url)
        if fs.isdir(root):
            base = root.rstrip("/")
            for name in fs.find(root):
                if not _hidden(name[len(base) :]):
                    found.add(fs.unstrip_protocol(name))
        elif fs.exists(root):
            found.add(fs.unstrip_protocol(root))
        else:
            msg = f"FileSource: no file or directory at {url!r}"
            raise FileNotFoundError(msg)
    return sorted(found)


class TextLineSplitReader:
    """Lines of text of one file, as Java's ``BufferedReader.readLine`` reads them.

    Byte offsets of line starts are exact only when ``\\n`` is the byte 0x0A; other
    charsets (UTF-16, UTF-32) resume by skipping the lines consumed, as Flink's
    TextLineInputFormat always does."""

    def __init__(self, charset_name: str, split: FileSplit) -> None:
        self._charset = charset_name
        self._java = JavaCharset(charset_name)
        self._by_offset = self._java.ascii_compatible
        self._split = split
        self._file = self._open(split)

    def read(self, limit: int) -> list[str] | None:
        split = self._split
        f = self._file
        lines: list[str] = []
        limit = min(limit, _LINES_PER_BATCH)
        if self._by_offset:
            decode = self._java.decode
            offset = split.offset
            for _ in range(limit):
                raw = f.readline()
                if not raw:
                    break
                offset += len(raw)
                # Java's BufferedReader.readLine: '\n', '\r' and '\r\n' each end a line.
                if raw.endswith(b"\n"):
                    raw = raw[:-1]
                if raw.endswith(b"\r"):
                    raw = raw[:-1]
                if b"\r" in raw:
                    lines.extend(decode(part) for part in raw.split(b"\r"))
                else:
                    lines.append(decode(raw))
            split.offset = offset
        else:
            for _ in range(limit):
                text = f.readline()
                if not text:
                    break
                lines.append(text.rstrip("\n").rstrip("\r"))
        split.lines += len(lines)
        return lines or None

    def _open(self, split: FileSplit) -> IO[Any]:
        if self._by_offset:
            f: IO[Any] = fsspec.open(split.path, "rb", compression="infer").open()
            if split.offset:
                f.seek(split.offset)
            return f
        # Malformed input reads as U+FFFD, as Java's InputStreamReader reads it.
        f = fsspec.open(
            split.path,
            "rt",
            encoding=self._charset,
            errors=JAVA_ERRORS,
            newline="",
            compression="infer",
        ).open()
        for _ in range(split.lines):
            f.readline()
        return f

    def close(self) -> None:
        self._file.close()


class FileSourceReader:
    """Reads the splits of one subtask, one file after the other, a batch of records a
    poll (``weir.core.source.SplitCheckpointedSourceReader``); with a columnar format,
    a ColumnBatch a poll to a consumer of columns (``poll_columns``).

    Not a ``SplitSourceReader``: as it reads one split at a time, one watermark
    generator over its output sees the event time that per-split ones would.

    Bounded: the files present at the first poll; then ``None``. Continuous: every
    ``discovery_interval_ms`` the paths are listed again and new files of the reader's
    discovery classes are queued; ``[]`` while there is nothing to read.
    """

    def __init__(
        self,
        paths: tuple[str, ...],
        split_format: SplitFormat,
        *,
        subtask: int,
        parallelism: int,
        discovery_interval_ms: int | None,
        clock: Callable[[], float],
    ) -> None:
        self._paths = paths
        self._format = split_format
        self._subtask = subtask
        self._interval_s = None if discovery_interval_ms is None else discovery_interval_ms / 1000
        self._clock = clock
        self._splits: collections.deque[FileSplit] = collections.deque()
        # (index, parallelism) of each class of paths this reader discovers -> the paths
        # of it discovered so far.
        self._classes: dict[tuple[int, int], set[str]] = {(subtask, parallelism): set()}
        # Paths discovered here or handed over in a split: never queued again.
        self._known: set[str] = set()
        self._enumerated = False
        self._next_discovery = 0.0
        self._reader: SplitReader | None = None

    # -- reading ------------------------------------------------------------------------
    def poll_batch(self, max_records: int) -> list[Any] | None:
        batch = self._poll(max_records)
        return None if batch is None else as_records(batch)

    def poll_columns(self, max_records: int) -> Sequence[Any] | None:
        """What ``poll_batch`` returns, as a ColumnBatch where the format is columnar."""
        return self._poll(max_records)

    def _poll(self, max_records: int) -> Sequence[Any] | None:
        self._enumerate_once()
        limit = max(1, max_records)
        while True:
            if self._splits:
                reader = self._reader
                if reader is None:
                    reader = self._reader = self._format.open_split(self._splits[0])
                records = reader.read(limit)
                if records is not None:
                    return records
                self._finish_split()
                continue
            if self._interval_s is None:
                return None
            if self._clock() < self._next_discovery or not self._discover():
                return []

    def _finish_split(self) -> None:
        self._splits.popleft()
        self.close()

    def _enumerate_once(self) -> None:
        """The first listing of the paths, at the first poll or at a checkpoint taken
        before it (whose state must then name the files this subtask is to read)."""
        if not self._enumerated:
            self._discover()
            self._enumerated = True

    def _discover(self) -> bool:
        """Queues the files of this reader's classes not seen before; True when there
        were any."""
        if self._interval_s is not None:
            self._next_discovery = self._clock() + self._interval_s
        classes = self._classes.items()
        new = 0
        for path in enumerate_files(self._paths):
            if path in self._known:
                continue
            for (index, parallelism), discovered in classes:
                if owner_of(path, parallelism) == index:
                    discovered.add(path)
                    self._known.add(path)
                    self._splits.append(FileSplit(path))
                    new += 1
                    break
        if new:
            logger.debug("subtask %d discovered %d new files", self._subtask, new)
        return bool(new)

    # -- positions ----------------------------------------------------------------------
    def snapshot_splits(self, checkpoint_id: int | None = None) -> list[tuple[Any, ...]]:
        """A ``(path, byte offset of the next line, lines consumed)`` per file still to
        read (the current one first) and, monitoring, a ``("discovery", index,
        parallelism, paths)`` per discovery class. Before the first poll, the files this
        subtask would read are listed first, so that a checkpoint taken then names them."""
        self._enumerate_once()
        splits: list[tuple[Any, ...]] = [(s.path, s.offset, s.lines) for s in self._splits]
        if self._interval_s is not None:
            splits += [
                (_DISCOVERY, index, parallelism, tuple(sorted(paths)))
                for (index, parallelism), paths in sorted(self._classes.items())
            ]
        return splits

    def restore_splits(self, splits: list[tuple[Any, ...]]) -> None:
        """Read exactly these files, each from its position, in the order given, and
        discover (monitoring) the new files of exactly these classes."""
        files: list[FileSplit] = []
        classes: dict[tuple[int, int], set[str]] = {}
        try:
            for split in splits:
                if len(split) == 4 and split[0] == _DISCOVERY:
                    _, index, parallelism, paths = split
                    classes[(int(index), int(parallelism))] = {str(p) for p in paths}
                else:
                    path, offset, lines = split
                    files.append(FileSplit(str(path), int(offset), int(lines)))
        except (TypeError, ValueError) as exc:
            msg = (
                f"FileSource: cannot restore splits {splits!r}; expected the (path, offset, "
                'lines) and ("discovery", index, parallelism, paths) tuples its reader\'s '
                "snapshot_splits returned"
            )
            raise SourceStateError(msg) from exc
        self._restore(files, classes)

    def restore_state(self, state: bytes) -> None:
        """A position written before the reader kept splits: JSON of the files still to
        read and, monitoring, the files already read (by this subtask's class)."""
        restored = json.loads(state)
        files = [FileSplit(p, o, n) for p, o, n in restored["splits"]]
        (own,) = self._classes
        self._restore(files, {own: set(restored["finished"]) | {f.path for f in files}})

    def _restore(self, files: list[FileSplit], classes: dict[tuple[int, int], set[str]]) -> None:
        self.close()
        self._splits = collections.deque(files)
        self._classes = classes
        self._known = {f.path for f in files}.union(*classes.values())
        self._enumerated = True
        self._next_discovery = 0.0

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
