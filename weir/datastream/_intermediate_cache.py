"""Where a ``CachedDataStream`` keeps its result, and the functions that write and read it.

A cache lives in a directory of its own, ``{execution.cache.dir}/{environment}/{cache}``,
reached through fsspec by the TaskManagers that write and read it and by the client that
checks and releases it (any URL all of them reach; a local directory on one host). The
job that computes the cached stream writes one part per subtask of it, as Flink keeps one
result partition per producer subtask: ``part-{i}-of-{n}``, each made whole by a rename
when its subtask's input ended, holding the records with their timestamps in pickled
chunks. The cache is complete when all ``n`` parts are there; a later job reads it with
a source of parallelism ``n``, subtask ``i`` reading part ``i``. A cache found incomplete
(a part lost, a job that failed while writing) is computed again by the next job that
uses it.
"""

from __future__ import annotations

import atexit
import logging
import pickle
import re
import threading
import uuid
from collections.abc import Callable
from typing import Any

import fsspec

from weir.core.job_graph import OperatorKind
from weir.core.source import SourceReaderContext
from weir.datastream.functions import RuntimeContext, SinkFunction
from weir.graph.transformations import (
    CacheTransformation,
    PhysicalTransformation,
    Transformation,
)

__all__ = [
    "CacheReader",
    "CacheSource",
    "CacheWriter",
    "IntermediateCache",
    "cache_transformation",
    "release_at_exit",
    "resolve_caches",
]

logger = logging.getLogger(__name__)

# Records per pickled chunk: one pickle call per chunk, and what a reader holds at once.
_CHUNK = 1024
_PART = re.compile(r"^part-(\d+)-of-(\d+)$")


class IntermediateCache:
    """One cached stream's directory, as the client sees it."""

    def __init__(self, root: str) -> None:
        self.cache_id = uuid.uuid4().hex
        self.root = root.rstrip("/")
        """The directory of the environment's caches."""
        self.url = f"{self.root}/{self.cache_id}"

    def complete_parts(self) -> int | None:
        """The number of parts when every one is there, else None (not computed yet,
        lost, or invalidated)."""
        fs, path = fsspec.core.url_to_fs(self.url)
        try:
            names = [name.rstrip("/").rsplit("/", 1)[-1] for name in fs.ls(path, detail=False)]
        except FileNotFoundError:
            return None
        parts: dict[int, set[int]] = {}
        for name in names:
            match = _PART.match(name)
            if match:
                parts.setdefault(int(match[2]), set()).add(int(match[1]))
        for total, present in parts.items():
            if total > 0 and present == set(range(total)):
                return total
        return None

    def release(self) -> None:
        """Delete what is kept (idempotent)."""
        if _remove(self.url):
            logger.info("cached stream %s released", self.cache_id)

    def release_root(self) -> None:
        """Delete the directory of the environment's caches, once they are released."""
        _remove(self.root)


def _remove(url: str) -> bool:
    fs, path = fsspec.core.url_to_fs(url)
    try:
        fs.rm(path, recursive=True)
    except FileNotFoundError:
        return False
    return True


_unreleased: set[IntermediateCache] = set()
_unreleased_lock = threading.Lock()


def release_at_exit(cache: IntermediateCache, pending: bool) -> None:
    """Keep ``cache`` on the list of caches the program's end releases (``pending``), or
    take it off once it was released: an environment never closed leaves nothing behind."""
    with _unreleased_lock:
        if pending:
            _unreleased.add(cache)
        else:
            _unreleased.discard(cache)


@atexit.register
def _release_unreleased() -> None:
    with _unreleased_lock:
        caches = list(_unreleased)
        _unreleased.clear()
    for cache in caches:
        try:
            cache.release()
            cache.release_root()
        except OSError:  # the storage went first; nothing more can be done at exit
            logger.warning("could not release cached stream %s", cache.url, exc_info=True)


class CacheWriter(SinkFunction):
    """Writes what one subtask of the cached stream produced into its part."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._file: Any = None
        self._pending: list[tuple[Any, int | None]] = []
        self._final = ""
        self._partial = ""

    def open(self, runtime_context: RuntimeContext) -> None:
        index = runtime_context.get_index_of_this_subtask()
        total = runtime_context.get_number_of_parallel_subtasks()
        name = f"part-{index}-of-{total}"
        self._final = f"{self._url}/{name}"
        self._partial = f"{self._url}/.{name}.{uuid.uuid4().hex}"
        fs, path = fsspec.core.url_to_fs(self._url)
        fs.makedirs(path, exist_ok=True)
        self._file = fsspec.open(self._partial, "wb").open()
        self._pending = []

    def invoke(self, value: Any, context: Any) -> None:
        self._pending.append((value, None if context is None else context.timestamp()))
        if len(self._pending) >= _CHUNK:
            self._write_pending()

    def _write_pending(self) -> None:
        if self._pending:
            pickle.dump(self._pending, self._file, protocol=5)
            self._pending = []

    def finish(self) -> None:
        """The input ended: the part becomes whole under its final name."""
        self._write_pending()
        self._file.close()
        self._file = None
        fs, partial = fsspec.core.url_to_fs(self._partial)
        _, final = fsspec.core.url_to_fs(self._final)
        fs.mv(partial, final)

    def close(self) -> None:
        if self._file is not None:  # ended before its input did: the part stays unwritten
            self._file.close()
            self._file = None
            fs, partial = fsspec.core.url_to_fs(self._partial)
            fs.rm(partial)

    def __getstate__(self) -> dict[str, Any]:
        return {"_url": self._url, "_file": None, "_pending": [], "_final": "", "_partial": ""}


class CacheReader:
    """Replays one part: records with the timestamps they had."""

    def __init__(self, url: str | None) -> None:
        self._file: Any = None if url is None else fsspec.open(url, "rb").open()
        self._timestamps: list[int | None] | None = None

    def poll_batch(self, max_records: int) -> list[Any] | None:
        if self._file is None:
            return None
        try:
            chunk = pickle.load(self._file)  # a part this job's own cache writer wrote
        except EOFError:
            self.close()
            return None
        stamps = [ts for _, ts in chunk]
        self._timestamps = stamps if any(ts is not None for ts in stamps) else None
        return [value for value, _ in chunk]

    def timestamps_of_last_batch(self) -> list[int | None] | None:
        """The timestamps of the records ``poll_batch`` returned last (None: none had one)."""
        return self._timestamps

    def snapshot_state(self, checkpoint_id: int) -> None:
        return None

    def restore_state(self, state: Any) -> None:
        """A cache is read in BATCH jobs, which take no checkpoints."""

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class CacheSource:
    """Reads a complete cache: subtask ``i`` of ``parts`` reads part ``i``."""

    def __init__(self, url: str, parts: int) -> None:
        self._url = url
        self._parts = parts

    def is_bounded(self) -> bool:
        return True

    def create_reader(self, context: SourceReaderContext) -> CacheReader:
        index = context.get_index_of_this_subtask()
        if index >= self._parts:
            return CacheReader(None)
        return CacheReader(f"{self._url}/part-{index}-of-{self._parts}")

    def __repr__(self) -> str:
        return f"CacheSource({self._url}, {self._parts} parts)"


def _pass_through(value: Any) -> Any:
    return value


def cache_transformation(
    transformation_id: int, upstream: Transformation, root: str
) -> CacheTransformation:
    """The transformation of ``upstream.cache()``, keeping its result under ``root``."""
    non_parallel = isinstance(upstream, PhysicalTransformation) and upstream.non_parallel
    return CacheTransformation(
        id=transformation_id,
        name="Cache",
        output_type=upstream.output_type,
        parallelism=upstream.parallelism,
        max_parallelism=upstream.max_parallelism,
        slot_sharing_group=upstream.slot_sharing_group,
        non_parallel=non_parallel,
        upstream=upstream,
        cache=IntermediateCache(root),
    )


def resolve_caches(
    roots: list[Transformation], next_id: Callable[[], int]
) -> list[PhysicalTransformation]:
    """Before a job is built: each cached stream it uses becomes a source reading its
    complete cache, or, when the cache is not complete, a pass-through of its input whose
    output the job also writes to the cache; returns those writers (sinks the job gets
    besides its own)."""
    writers: list[PhysicalTransformation] = []
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if isinstance(t, CacheTransformation):
            parts = t.cache.complete_parts()
            if parts is None:
                t.cache.release()  # parts of a run that did not complete
                _compute(t)
                writers.append(_writer(t, next_id()))
            else:
                _read(t, parts)
        stack.extend(t.inputs)
    return writers


def _compute(t: CacheTransformation) -> None:
    upstream = t.upstream
    assert upstream is not None
    t.kind = OperatorKind.MAP
    t.input_streams = [upstream]
    t.payload = {"function": _pass_through}
    t.parallelism = upstream.parallelism
    t.max_parallelism = upstream.max_parallelism


def _read(t: CacheTransformation, parts: int) -> None:
    t.kind = OperatorKind.SOURCE
    t.input_streams = []
    t.payload = {"source": CacheSource(t.cache.url, parts)}
    t.parallelism = parts
    t.non_parallel = False


def _writer(t: CacheTransformation, transformation_id: int) -> PhysicalTransformation:
    return PhysicalTransformation(
        id=transformation_id,
        name="Cache Writer",
        kind=OperatorKind.SINK,
        input_streams=[t],
        payload={"function": CacheWriter(t.cache.url)},
        parallelism=t.parallelism,
        max_parallelism=t.max_parallelism,
        slot_sharing_group=t.slot_sharing_group,
    )
