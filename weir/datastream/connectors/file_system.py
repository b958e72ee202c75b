"""File connectors (mirrors ``pyflink.datastream.connectors.file_system``): ``FileSource``
reads files on any fsspec URL (lines of text here; CSV and Parquet with the formats of
``weir.datastream.formats``); ``FileSink`` writes part files exactly once.

``FileSink`` is a SinkFunction and a CheckpointedFunction: its writer's state (pending
and in-progress files) is one element of a list state, ``writer_raw_states``, as Flink's
sink writer keeps it. The task calls its hooks on its own thread, never concurrently, in
this order::

    initialize_state(context)        before the first record: a fresh start, or the state
                                     of a completed checkpoint (context.is_restored()),
                                     whose files are committed then
    open(runtime_context)
    invoke(value, context)*          interleaved with, per checkpoint n (n increasing):
        snapshot_state(context)        pre-commit: rolled files become pending for n
        notify_checkpoint_complete(n)  commit: pending files of checkpoints <= n show
        notify_checkpoint_aborted(n)   nothing: n's pending files join the next checkpoint
    finish()                         end of bounded input: close and commit everything
    close()                          always, also after a failure; commits nothing

Guarantees: a record is visible only once the checkpoint after it completed (or input
ended); after recovery from checkpoint n, the visible output is exactly the records
before n, once each, however often n is restored, and no hidden file written after n is
left. Without ``initialize_state`` the sink starts fresh on its first record (and keeps
no state).

Part files are renamed within the file system on commit where it renames atomically and a
flushed file keeps its bytes (local, ``memory://``, HDFS). On S3 (``s3://``, ``s3a://``)
each part file is a multipart upload of its final object, completed on commit, as Flink's
S3 writer does (``_s3_part_files``): any rolling policy works there. On other object stores
(``gs://``, ...) use ``RollingPolicy.on_checkpoint_rolling_policy()``, so no file stays in
progress across a checkpoint.
"""

from __future__ import annotations

import abc
import re
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from fsspec.core import url_to_fs

from weir.common.serialization import Encoder
from weir.common.time import Duration
from weir.common.typeinfo import TypeInformation, Types
from weir.core.checkpointed_function import (
    CheckpointedFunction,
    FunctionInitializationContext,
    FunctionSnapshotContext,
)
from weir.core.local_paths import absolute_local_path
from weir.core.source import SourceReaderContext
from weir.datastream.connectors._file_source_reader import (
    FileSourceReader,
    FileSplit,
    SplitReader,
    TextLineSplitReader,
    enumerate_files,
)
from weir.datastream.connectors._file_writer import FileWriter, InProgressFile
from weir.datastream.functions import CheckpointListener, RuntimeContext, SinkFunction
from weir.datastream.state import ListState, ListStateDescriptor

__all__ = [
    "BucketAssigner",
    "BulkFormat",
    "DefaultRollingPolicy",
    "Encoder",
    "FileSink",
    "FileSource",
    "FileSourceBuilder",
    "OnCheckpointRollingPolicy",
    "OutputFileConfig",
    "RollingPolicy",
    "StreamFormat",
]


def _file_size(url: str) -> int:
    fs, root = url_to_fs(url)
    return int(fs.size(root) or 0)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# ---- FileSource ----------------------------------------------------------------------


class StreamFormat:
    """A reader format that reads records from a file stream: text lines here, CSV in
    ``weir.datastream.formats.csv``.

    What ``FileSource`` asks of a format (``_file_source_reader.SplitFormat``):
    ``open_split(split)``, a reader of one file from its position; ``columnar``, whether
    its reads are ColumnBatches; ``produced_type()``, the records' type."""

    columnar = False

    def __init__(self, charset_name: str) -> None:
        self.charset_name = charset_name

    @staticmethod
    def text_line_format(charset_name: str = "UTF-8") -> StreamFormat:
        """Lines of text, without their line endings (``\\n``, ``\\r\\n``)."""
        "\n".encode(charset_name)  # fail here, on the client, on an unknown charset
        return StreamFormat(charset_name)

    def open_split(self, split: FileSplit) -> SplitReader:
        return TextLineSplitReader(self.charset_name, split)

    def produced_type(self) -> TypeInformation:
        return Types.STRING()


class BulkFormat(abc.ABC):
    """A reader format that reads batches of records from a file, column by column
    (``weir.datastream.formats.parquet``); see ``StreamFormat`` for what it provides."""

    columnar = True

    @abc.abstractmethod
    def open_split(self, split: FileSplit) -> SplitReader:
        """A reader of ``split`` from its position on."""

    @abc.abstractmethod
    def produced_type(self) -> TypeInformation:
        """The type of the records it reads."""


class FileSourceBuilder:
    """Configures a FileSource; start with ``FileSource.for_record_stream_format``."""

    def __init__(self, stream_format: StreamFormat | BulkFormat, paths: tuple[str, ...]) -> None:
        self._stream_format = stream_format
        self._paths = paths
        self._discovery_interval: Duration | None = None

    def monitor_continuously(self, discovery_interval: Duration) -> FileSourceBuilder:
        """Sets this source to streaming ("continuous monitoring") mode: every
        ``discovery_interval`` the paths are listed again and new files are read."""
        if discovery_interval.to_milliseconds() <= 0:
            msg = f"monitor_continuously: the interval must be positive; got {discovery_interval}"
            raise ValueError(msg)
        self._discovery_interval = discovery_interval
        return self

    def process_static_file_set(self) -> FileSourceBuilder:
        """Sets this source to bounded (batch) mode, the default: the files present when
        the job starts are read, then the source finishes."""
        self._discovery_interval = None
        return self

    def build(self) -> FileSource:
        interval = self._discovery_interval
        return FileSource(
            self._paths,
            self._stream_format,
            None if interval is None else interval.to_milliseconds(),
        )


class FileSource:
    """A source that reads files, bounded or continuously monitoring for new ones::

        source = FileSource.for_record_stream_format(
            StreamFormat.text_line_format(), "file:///data/in").build()
        env.from_source(source, WatermarkStrategy.no_watermarks(), "files")

    Each file is one split; a subtask reads the files assigned to it (by a stable hash of
    the path) one after the other. Hidden files (``.``/``_`` prefix) under a directory
    are skipped; ``.gz``, ``.bz2`` and ``.xz`` files are decompressed. The reader's
    checkpointed state is, per file not yet read to its end, the path, the byte offset
    of the next line and the lines consumed, and, monitoring continuously, the files
    already discovered; these splits are dealt out again when a checkpoint is restored
    at another parallelism.
    """

    def __init__(
        self,
        paths: tuple[str, ...],
        stream_format: StreamFormat | BulkFormat,
        discovery_interval_ms: int | None = None,
        *,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if not paths:
            msg = "FileSource: give at least one path"
            raise ValueError(msg)
        self._paths = tuple(absolute_local_path(p) for p in paths)
        self._stream_format = stream_format
        self._discovery_interval_ms = discovery_interval_ms
        self._clock = clock

    @staticmethod
    def for_record_stream_format(stream_format: StreamFormat, *paths: str) -> FileSourceBuilder:
        """Builds a FileSource reading the records of ``stream_format`` from ``paths``
        (files or directories, any fsspec URL)."""
        if not isinstance(stream_format, StreamFormat):
            msg = (
                "FileSource.for_record_stream_format needs a StreamFormat (text_line_format, "
                f"CsvReaderFormat); got {type(stream_format).__name__}"
            )
            raise TypeError(msg)
        return FileSourceBuilder(stream_format, tuple(paths))

    @staticmethod
    def for_bulk_file_format(bulk_format: BulkFormat, *paths: str) -> FileSourceBuilder:
        """Builds a FileSource reading the records of ``bulk_format`` (e.g.
        ``ParquetColumnarRowInputFormat``) from ``paths`` (files or directories, any
        fsspec URL)."""
        if not isinstance(bulk_format, BulkFormat):
            msg = (
                "FileSource.for_bulk_file_format needs a BulkFormat "
                f"(ParquetColumnarRowInputFormat); got {type(bulk_format).__name__}"
            )
            raise TypeError(msg)
        return FileSourceBuilder(bulk_format, tuple(paths))

    def is_bounded(self) -> bool:
        return self._discovery_interval_ms is None

    def create_reader(self, context: SourceReaderContext) -> FileSourceReader:
        return FileSourceReader(
            self._paths,
            self._stream_format,
            subtask=context.get_index_of_this_subtask(),
            parallelism=context.get_number_of_parallel_subtasks(),
            discovery_interval_ms=self._discovery_interval_ms,
            clock=self._clock or time.monotonic,
        )

    def get_produced_type(self) -> TypeInformation:
        return self._stream_format.produced_type()

    def estimated_size_bytes(self) -> int:
        """The volume the source reads, for BATCH mode's parallelism: its files' sizes."""
        return sum(_file_size(url) for url in enumerate_files(self._paths))

    def infer_parallelism(self, upper_bound: int) -> int:
        """BATCH mode's parallelism of a FileSource that sets none: one subtask per file (a
        split each), at most ``upper_bound`` (Flink's FileSource.inferParallelism)."""
        try:
            files = len(enumerate_files(self._paths))
        except OSError:
            return upper_bound  # not readable from the client; the TaskManagers will say
        return max(1, min(files, upper_bound))

    def __repr__(self) -> str:
        mode = (
            "bounded"
            if self._discovery_interval_ms is None
            else f"every {self._discovery_interval_ms} ms"
        )
        return f"FileSource({', '.join(self._paths)}; {mode})"


# ---- FileSink: formats, names, buckets, rolling ---------------------------------------


class OutputFileConfig:
    """Part file names: ``{prefix}-{uid}-{counter}{suffix}`` (default prefix ``part``)."""

    def __init__(self, part_prefix: str, part_suffix: str) -> None:
        if "/" in part_prefix or "/" in part_suffix:
            msg = (
                f"OutputFileConfig: prefix and suffix must not contain '/'; got "
                f"{part_prefix!r}, {part_suffix!r}"
            )
            raise ValueError(msg)
        self._part_prefix = part_prefix
        self._part_suffix = part_suffix

    @staticmethod
    def builder() -> OutputFileConfig.OutputFileConfigBuilder:
        return OutputFileConfig.OutputFileConfigBuilder()

    def get_part_prefix(self) -> str:
        return self._part_prefix

    def get_part_suffix(self) -> str:
        return self._part_suffix

    class OutputFileConfigBuilder:
        def __init__(self) -> None:
            self.part_prefix = "part"
            self.part_suffix = ""

        def with_part_prefix(self, prefix: str) -> OutputFileConfig.OutputFileConfigBuilder:
            self.part_prefix = prefix
            return self

        def with_part_suffix(self, suffix: str) -> OutputFileConfig.OutputFileConfigBuilder:
            self.part_suffix = suffix
            return self

        def build(self) -> OutputFileConfig:
            return OutputFileConfig(self.part_prefix, self.part_suffix)


class BucketAssigner:
    """Chooses the bucket (sub-directory of the base path; ``""`` is the base path itself)
    of each record. Subclass and implement ``get_bucket_id(element, context)``, or use
    one of the factories."""

    class Context:
        """What a BucketAssigner knows of the record's moment."""

        def __init__(self, processing_time: int) -> None:
            self._processing_time = processing_time

        def current_processing_time(self) -> int:
            return self._processing_time

        def current_watermark(self) -> int | None:
            return None

        def timestamp(self) -> int | None:
            return None

    def get_bucket_id(self, element: Any, context: BucketAssigner.Context) -> str:
        return ""

    @staticmethod
    def base_path_bucket_assigner() -> BucketAssigner:
        """Every record in the base path, without buckets."""
        return BucketAssigner()

    @staticmethod
    def date_time_bucket_assigner(
        format_str: str = "yyyy-MM-dd--HH", timezone_id: str | None = None
    ) -> BucketAssigner:
        """Buckets by the current processing time, formatted with the Java DateTimeFormatter
        pattern ``format_str`` (hourly by default) in ``timezone_id`` (default: local)."""
        return _DateTimeBucketAssigner(format_str, timezone_id)


# Java DateTimeFormatter letters and their strftime equivalents.
_JAVA_PATTERN = re.compile(r"'[^']*'|y+|M+|d+|H+|h+|m+|s+|a|[A-Za-z]")
_JAVA_TO_STRFTIME = {
    "yyyy": "%Y",
    "yy": "%y",
    "MM": "%m",
    "dd": "%d",
    "HH": "%H",
    "hh": "%I",
    "mm": "%M",
    "ss": "%S",
    "a": "%p",
}


def java_pattern_to_strftime(pattern: str) -> str:
    """``yyyy-MM-dd--HH`` → ``%Y-%m-%d--%H``; quoted text stays literal."""
    out, last = [], 0
    for match in _JAVA_PATTERN.finditer(pattern):
        out.append(pattern[last : match.start()].replace("%", "%%"))
        token = match.group()
        if token.startswith("'"):
            out.append(token[1:-1].replace("%", "%%") or "'")
        elif token in _JAVA_TO_STRFTIME:
            out.append(_JAVA_TO_STRFTIME[token])
        else:
            msg = (
                f"date_time_bucket_assigner: {token!r} in {pattern!r} is not supported; "
                f"use {', '.join(_JAVA_TO_STRFTIME)} or quoted text"
            )
            raise ValueError(msg)
        last = match.end()
    out.append(pattern[last:].replace("%", "%%"))
    return "".join(out)


class _DateTimeBucketAssigner(BucketAssigner):
    def __init__(self, format_str: str, timezone_id: str | None) -> None:
        self.format_str = format_str
        self.timezone_id = timezone_id
        self._strftime = java_pattern_to_strftime(format_str)

    def get_bucket_id(self, element: Any, context: BucketAssigner.Context) -> str:
        seconds = context.current_processing_time() / 1000
        if self.timezone_id is None:
            moment = datetime.fromtimestamp(seconds, UTC).astimezone()
        else:
            moment = datetime.fromtimestamp(seconds, ZoneInfo(self.timezone_id))
        return moment.strftime(self._strftime)


class RollingPolicy:
    """When a bucket closes its part file and opens a new one. Sizes in bytes, times in
    ms of processing time; ``part_file`` offers ``get_size()``, ``get_creation_time()``,
    ``get_last_update_time()`` and ``get_bucket_id()``."""

    def should_roll_on_checkpoint(self, part_file: InProgressFile) -> bool:
        return False

    def should_roll_on_event(self, part_file: InProgressFile, element: Any) -> bool:
        return False

    def should_roll_on_processing_time(self, part_file: InProgressFile, current_time: int) -> bool:
        return False

    @staticmethod
    def default_rolling_policy(
        part_size: int = 1024 * 1024 * 128,
        rollover_interval: int = 60 * 1000,
        inactivity_interval: int = 60 * 1000,
    ) -> DefaultRollingPolicy:
        """Rolls when the part file is larger than ``part_size``, older than
        ``rollover_interval`` ms, or not written for ``inactivity_interval`` ms."""
        return DefaultRollingPolicy(part_size, rollover_interval, inactivity_interval)

    @staticmethod
    def on_checkpoint_rolling_policy() -> OnCheckpointRollingPolicy:
        """Rolls (only) on every checkpoint."""
        return OnCheckpointRollingPolicy()


class DefaultRollingPolicy(RollingPolicy):
    def __init__(self, part_size: int, rollover_interval: int, inactivity_interval: int) -> None:
        for name, value in (
            ("part_size", part_size),
            ("rollover_interval", rollover_interval),
            ("inactivity_interval", inactivity_interval),
        ):
            if value <= 0:
                msg = f"default_rolling_policy: {name} must be positive; got {value!r}"
                raise ValueError(msg)
        self.part_size = part_size
        self.rollover_interval = rollover_interval
        self.inactivity_interval = inactivity_interval

    def should_roll_on_checkpoint(self, part_file: InProgressFile) -> bool:
        return part_file.get_size() > self.part_size

    def should_roll_on_event(self, part_file: InProgressFile, element: Any) -> bool:
        return part_file.get_size() > self.part_size

    def should_roll_on_processing_time(self, part_file: InProgressFile, current_time: int) -> bool:
        return (
            current_time - part_file.get_creation_time() >= self.rollover_interval
            or current_time - part_file.get_last_update_time() >= self.inactivity_interval
        )


class OnCheckpointRollingPolicy(RollingPolicy):
    def should_roll_on_checkpoint(self, part_file: InProgressFile) -> bool:
        return True


# ---- FileSink ------------------------------------------------------------------------


class FileSink(SinkFunction, CheckpointedFunction, CheckpointListener):
    """A sink that writes its records to part files in buckets under a base path, exactly
    once (see the module docstring for the hooks and the file lifecycle)::

        sink = (FileSink.for_row_format("file:///data/out", Encoder.simple_string_encoder())
                .with_output_file_config(OutputFileConfig.builder()
                                         .with_part_prefix("pre").with_part_suffix(".txt")
                                         .build())
                .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=1 << 20))
                .build())
        ds.sink_to(sink)

    Part files are in-progress while written, pending once rolled, and finished (visible)
    when the checkpoint after them completes, or at the end of bounded input. In-progress
    and pending files are hidden (their names start with a dot).
    """

    def __init__(
        self,
        base_path: str,
        encoder: Encoder,
        *,
        bucket_assigner: BucketAssigner,
        rolling_policy: RollingPolicy,
        output_file_config: OutputFileConfig,
        bucket_check_interval: int = 60 * 1000,
        clock: Callable[[], int] | None = None,
    ) -> None:
        self._base_path = absolute_local_path(base_path)
        self._encoder = encoder
        self._bucket_assigner = bucket_assigner
        self._rolling_policy = rolling_policy
        self._output_file_config = output_file_config
        self._bucket_check_interval = bucket_check_interval
        self._clock = clock
        self._writer: FileWriter | None = None
        self._restored = False
        # Set each time the sink is pickled into a job (__getstate__): the same for every
        # subtask and attempt of that job, another for each job.
        self._job_token: str | None = None
        self._state: ListState | None = None
        self._next_bucket_check = 0
        self._finished = False

    @staticmethod
    def for_row_format(base_path: str, encoder: Encoder) -> FileSink.RowFormatBuilder:
        return FileSink.RowFormatBuilder(base_path, encoder)

    class RowFormatBuilder:
        """Builder of a FileSink writing one encoded record after the other."""

        def __init__(self, base_path: str, encoder: Encoder) -> None:
            self._base_path = base_path
            self._encoder = encoder
            self._bucket_assigner: BucketAssigner = BucketAssigner.date_time_bucket_assigner()
            self._rolling_policy: RollingPolicy = RollingPolicy.default_rolling_policy()
            self._output_file_config = OutputFileConfig.builder().build()
            self._bucket_check_interval = 60 * 1000

        def with_bucket_check_interval(self, interval: int) -> FileSink.RowFormatBuilder:
            """How often (ms) part files are checked against the time-based rolling rules."""
            self._bucket_check_interval = interval
            return self

        def with_bucket_assigner(
            self,
            bucket_assigner: BucketAssigner,
        ) -> FileSink.RowFormatBuilder:
            self._bucket_assigner = bucket_assigner
            return self

        def with_rolling_policy(
            self,
            rolling_policy: RollingPolicy,
        ) -> FileSink.RowFormatBuilder:
            self._rolling_policy = rolling_policy
            return self

        def with_output_file_config(
            self,
            output_file_config: OutputFileConfig,
        ) -> FileSink.RowFormatBuilder:
            self._output_file_config = output_file_config
            return self

        def build(self) -> FileSink:
            return FileSink(
                self._base_path,
                self._encoder,
                bucket_assigner=self._bucket_assigner,
                rolling_policy=self._rolling_policy,
                output_file_config=self._output_file_config,
                bucket_check_interval=self._bucket_check_interval,
            )

    # -- lifecycle ------------------------------------------------------------------------
    def _now(self) -> int:
        return (self._clock or _now_ms)()

    def _writer_or_fresh(self) -> FileWriter:
        if self._writer is None:
            self._start()
        assert self._writer is not None
        return self._writer

    def _start(self) -> FileWriter:
        config = self._output_file_config
        self._writer = FileWriter(
            self._base_path,
            config.get_part_prefix(),
            config.get_part_suffix(),
            self._rolling_policy,
            self._now,
        )
        self._finished = False
        return self._writer

    def initialize_state(self, context: FunctionInitializationContext) -> None:
        """Takes the list state of the writer. On recovery from a completed checkpoint its
        pending files and the checkpointed part of its in-progress files are committed
        (unless an earlier restore of it did so), and the hidden files written after it
        are discarded: a checkpoint may be restored any number of times."""
        self._state = context.get_operator_state_store().get_list_state(
            ListStateDescriptor("writer_raw_states", Types.PICKLED_BYTE_ARRAY())
        )
        restored = list(self._state.get()) if context.is_restored() else []
        # At a lower parallelism a subtask gets the writer states of several old ones
        # (Flink merges their buckets): it commits what each holds.
        self._start().restore(restored)
        self._restored = bool(restored)

    def open(self, runtime_context: RuntimeContext) -> None:
        writer = self._writer_or_fresh()
        if not self._restored and self._job_token is not None:
            # A fresh writer names its files after its job and subtask, so that a restarted
            # attempt that had no checkpoint to restore finds what earlier ones left.
            subtask = runtime_context.get_index_of_this_subtask()
            uid = str(uuid.uuid5(uuid.UUID(self._job_token), str(subtask)))
            writer.start_fresh(uid, discard_leftovers=runtime_context.get_attempt_number() > 0)

    def invoke(self, value: Any, context: Any) -> None:
        writer = self._writer_or_fresh()
        now = self._now()
        if now >= self._next_bucket_check:
            writer.roll_on_processing_time(now)
            self._next_bucket_check = now + self._bucket_check_interval
        bucket = self._bucket_assigner.get_bucket_id(value, BucketAssigner.Context(now))
        writer.write(bucket, value, self._encoder.to_bytes(value), now)

    def snapshot_state(self, context: FunctionSnapshotContext) -> None:
        """Pre-commit: files rolled since the last checkpoint become this checkpoint's
        pending files; in-progress files are flushed and their lengths recorded, all in
        the writer's state."""
        state = self._writer_or_fresh().snapshot(context.get_checkpoint_id())
        if self._state is not None:
            self._state.update([state])

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Commit: pending files of checkpoints up to ``checkpoint_id`` become visible."""
        if self._writer is not None:
            self._writer.commit_up_to(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        """Nothing to undo: the aborted checkpoint's pending files are committed with the
        next checkpoint that completes, as in Flink."""

    def finish(self) -> None:
        """End of bounded input: every part file is closed; it becomes pending and is
        committed by the next checkpoint that completes, the task's final one (FLIP-147).
        Without checkpoints, the task commits it at once (``snapshot_state`` and
        ``notify_checkpoint_complete`` with the end-of-input id)."""
        self._writer_or_fresh().finish()
        self._finished = True

    def close(self) -> None:
        """Closes open files without committing them (after a failure they stay hidden
        until recovery decides)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_writer"] = None  # open files never travel with the function
        state["_job_token"] = uuid.uuid4().hex
        return state

    def __repr__(self) -> str:
        return f"FileSink({self._base_path!r})"
