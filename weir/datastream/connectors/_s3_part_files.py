"""``FileSink`` part files on S3, as multipart uploads (the design of Flink's
``S3RecoverableWriter``/``RecoverableMultiPartUpload``, in our own code).

S3 has no rename, no append and no flush that makes bytes visible, but a multipart upload
is invisible until it is completed, and completing it is one atomic request that makes the
object exactly the parts it lists. So:

1. Opening a part file starts nothing; records collect in memory, and every
   ``s3.upload.min.part.size`` bytes (5 MiB, S3's minimum for all parts but the last) are
   uploaded as the next part of a multipart upload of the *final* object, started with the
   first part, after a hidden empty marker ``.{name}.inprogress.upload`` beside it: a
   restore finds the uploads it may have to abort by their markers, since some stores
   (MinIO) list unfinished uploads only object by object. The commit deletes the marker.
   Up to ``s3.upload.max.concurrent.uploads`` parts are in flight beside the task's
   writing; a per-record write only appends to a buffer.
2. A checkpoint waits for the parts in flight and puts the bytes not yet in a part (less
   than a part) aside as a hidden object of their own, ``.{name}.inprogress.{uuid}``, one
   PUT: the checkpoint records the upload id, the numbers and ETags of its parts and that
   object. Such objects are deleted once a later checkpoint completed.
3. Rolling uploads the rest as the last part; the committable is the upload id and its
   parts. Committing, when the checkpoint covering it completes, completes the upload:
   the object appears whole, at once.
4. A restore completes the checkpoint's committables, and for each part file the
   checkpoint had in progress completes its upload with exactly the recorded parts and the
   put-aside bytes as the last part (copied inside S3): parts uploaded after the checkpoint
   are left out and dropped with the upload. Either, found done by an earlier restore (the
   object is there, of the recorded size), is left alone. The writer then aborts the
   uploads of its restored names still unfinished (written after the checkpoint) and
   deletes their put-aside objects.

So a visible object is always a whole committed part file, and nothing unfinished outlives
a restore. Uploads left by a job that was cancelled or failed for good stay (its latest
checkpoint may still be restored): an ``AbortIncompleteMultipartUpload`` lifecycle rule on
the bucket ends them, as for Flink.
"""

from __future__ import annotations

import collections
import logging
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from weir.core import s3_settings
from weir.core.errors import CheckpointError
from weir.datastream.connectors._part_files import _check_committed_size

logger = logging.getLogger(__name__)

# The marker beside a final name whose upload may be unfinished: hidden, and named as the
# writer's other hidden files (.{name}.inprogress.*), which a restore deletes.
_MARKER_SUFFIX = ".inprogress.upload"


def _marker(final: str) -> str:
    directory, _, name = final.rpartition("/")
    return f"{directory}/.{name}{_MARKER_SUFFIX}"


class MultipartPart:
    """One part file: a multipart upload of its final object (module docstring)."""

    def __init__(self, files: MultipartPartFiles, final: str) -> None:
        self.final = final
        self._files = files
        self._fs = files.fs
        self._upload_id: str | None = None
        self._parts: list[tuple[int, str]] = []
        self._uploaded = 0  # bytes in self._parts
        self._in_flight: collections.deque[tuple[int, int, Future[str]]] = collections.deque()
        self._buffer = bytearray()
        self._next_number = 1

    def write(self, data: bytes) -> None:
        self._buffer += data
        if len(self._buffer) >= self._files.part_size:
            self._upload_buffer()

    def _upload_buffer(self) -> None:
        if self._upload_id is None:
            self._files.mark_upload(self.final)
            self._upload_id = self._fs.create_multipart_upload(self.final)
        data, self._buffer = bytes(self._buffer), bytearray()
        number, self._next_number = self._next_number, self._next_number + 1
        while len(self._in_flight) >= self._files.max_in_flight:
            self._collect_oldest()
        future = self._files.uploads.submit(
            self._fs.upload_part, self.final, self._upload_id, number, data
        )
        self._in_flight.append((number, len(data), future))

    def _collect_oldest(self) -> None:
        number, size, future = self._in_flight.popleft()
        self._parts.append((number, future.result()))
        self._uploaded += size

    def _await_uploads(self) -> None:
        while self._in_flight:
            self._collect_oldest()

    def persist(self, checkpoint_id: int) -> dict[str, Any]:
        self._await_uploads()
        tail = None
        if self._buffer:
            directory, _, name = self.final.rpartition("/")
            tail = f"{directory}/.{name}.inprogress.{uuid.uuid4()}"
            self._fs.pipe_file(tail, bytes(self._buffer))
            self._files.put_aside(checkpoint_id, tail)
        return {
            "final": self.final,
            "upload_id": self._upload_id,
            "parts": [list(p) for p in self._parts],
            "tail": tail,
            "size": self._uploaded + len(self._buffer),
        }

    def close_for_commit(self) -> dict[str, Any]:
        if self._buffer or not (self._parts or self._in_flight):
            self._upload_buffer()  # the last part, of any size
        self._await_uploads()
        return {
            "final": self.final,
            "upload_id": self._upload_id,
            "parts": [list(p) for p in self._parts],
            "size": self._uploaded,
        }

    def close(self) -> None:
        # The upload stays: a restore of the latest checkpoint completes or aborts it.
        while self._in_flight:
            _, _, future = self._in_flight.popleft()
            if future.exception() is not None:
                logger.debug("FileSink: a part upload of %s failed", self.final)

    def discard(self) -> None:
        """Abort the upload (no checkpoint holds it) and drop its marker."""
        self.close()
        if self._upload_id is None:
            return
        logger.info(
            "FileSink: aborting the upload of s3://%s, which no checkpoint holds", self.final
        )
        upload_id, self._upload_id = self._upload_id, None
        self._fs.abort_multipart_upload(self.final, upload_id)
        try:
            self._fs.rm(_marker(self.final))
        except FileNotFoundError:
            pass


class MultipartPartFiles:
    """``PartFiles`` on S3 (``_part_files.PartFiles``; module docstring)."""

    def __init__(self, fs: Any) -> None:
        self.fs = fs
        settings = s3_settings.current()
        self.part_size = settings.upload_min_part_size
        self.max_in_flight = settings.upload_max_concurrent_uploads
        self.uploads = ThreadPoolExecutor(self.max_in_flight, thread_name_prefix="s3-part-upload")
        # Put-aside objects by the checkpoint that wrote them: needed until a later one
        # completes.
        self._put_aside: dict[int, list[str]] = {}

    def open(self, directory: str, name: str) -> MultipartPart:
        return MultipartPart(self, f"{directory}/{name}")

    def put_aside(self, checkpoint_id: int, path: str) -> None:
        self._put_aside.setdefault(checkpoint_id, []).append(path)

    def mark_upload(self, final: str) -> None:
        """Leave a hidden marker beside ``final`` before starting its upload: how a later
        restore finds the uploads to abort (some stores, MinIO among them, list a
        bucket's unfinished uploads only object by object, never by prefix)."""
        self.fs.pipe_file(_marker(final), b"")

    def _unmark(self, final: str) -> None:
        """``final`` is committed: abort any other upload of it, then drop its marker. A
        restore that completes a part file from the checkpoint's parts can meet another
        upload of the same name, started after the checkpoint when the file rolled."""
        self._abort_uploads_of(final)
        try:
            self.fs.rm(_marker(final))
        except FileNotFoundError:
            pass  # a restore of a commit that was done: the marker went with it

    def _abort_uploads_of(self, final: str) -> None:
        for path, upload_id in self.fs.list_multipart_uploads(final):
            if path == final:
                logger.info(
                    "FileSink: aborting the upload of s3://%s (written after the checkpoint)",
                    path,
                )
                self.fs.abort_multipart_upload(path, upload_id)

    def commit(self, committable: Any) -> None:
        final, size = committable["final"], committable["size"]
        parts = [(int(n), str(etag)) for n, etag in committable["parts"]]
        try:
            self.fs.complete_multipart_upload(final, committable["upload_id"], parts)
        except FileNotFoundError as exc:
            if self._committed_size(final) == size:
                logger.info("FileSink: s3://%s was committed before", final)
                self._unmark(final)
                return
            msg = (
                f"FileSink: cannot commit s3://{final}: its multipart upload "
                f"{committable['upload_id']} is gone and the object was not committed "
                "before (was the upload aborted by a lifecycle rule?); the output lost data"
            )
            raise CheckpointError(msg) from exc
        self._unmark(final)

    def commit_in_progress(self, resumable: dict[str, Any]) -> None:
        fs = self.fs
        final, size, tail = resumable["final"], resumable["size"], resumable.get("tail")
        committed = self._committed_size(final)
        if committed is not None:
            _check_committed_size(final, committed, size, f"upload {resumable['upload_id']}")
            logger.info("FileSink: s3://%s was committed by an earlier restore", final)
        else:
            if tail is not None and not fs.exists(tail):
                msg = (
                    f"FileSink: the last {size} bytes of s3://{final} put aside at the "
                    f"restored checkpoint (s3://{tail}) are gone and the object was never "
                    "committed; its data cannot be recovered"
                )
                raise CheckpointError(msg)
            parts = [(int(n), str(etag)) for n, etag in resumable["parts"]]
            upload_id = resumable["upload_id"]
            if not parts and tail is None:
                fs.pipe_file(final, b"")  # an empty part file
            elif not parts:
                fs.copy(tail, final)  # all of it was put aside: one copy, atomic
            else:
                if tail is not None:
                    number = max(n for n, _ in parts) + 1
                    parts.append((number, fs.upload_part_copy(final, upload_id, number, tail)))
                try:
                    fs.complete_multipart_upload(final, upload_id, parts)
                except FileNotFoundError as exc:
                    msg = (
                        f"FileSink: the multipart upload {upload_id} of s3://{final} in the "
                        "restored checkpoint is gone and the object was never committed; "
                        "its data cannot be recovered"
                    )
                    raise CheckpointError(msg) from exc
        if tail is not None and fs.exists(tail):
            fs.rm(tail)
        self._unmark(final)

    def _committed_size(self, final: str) -> int | None:
        try:
            return int(self.fs.size(final))
        except FileNotFoundError:
            return None

    def checkpoint_complete(self, checkpoint_id: int) -> None:
        for earlier in [c for c in self._put_aside if c < checkpoint_id]:
            for path in self._put_aside.pop(earlier):
                try:
                    self.fs.rm(path)
                except FileNotFoundError:
                    pass  # deleted by a restore already
                except OSError:
                    # Space, not correctness: a restore deletes what is left of its names.
                    logger.warning("FileSink: could not delete s3://%s", path, exc_info=True)

    def abort_uploads(self, root: str, matches: Any) -> None:
        try:
            paths = self.fs.find(root)
        except FileNotFoundError:
            return
        for marker in paths:
            directory, _, name = marker.rpartition("/")
            if not (name.startswith(".") and name.endswith(_MARKER_SUFFIX)):
                continue
            final_name = name[1 : -len(_MARKER_SUFFIX)]
            if not matches.fullmatch(final_name):
                continue
            self._abort_uploads_of(f"{directory}/{final_name}")
            self.fs.rm(marker)

    def close(self) -> None:
        self.uploads.shutdown(wait=True)
