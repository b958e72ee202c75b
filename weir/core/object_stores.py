"""What checkpoint and file code must do differently on an object store (S3, GCS, Azure
Blob): there is no rename (fsspec's ``mv`` copies, then deletes), no directory (a prefix
exists while objects are under it), and no flush that makes bytes visible; but a PUT is
all-or-nothing, so a whole object written in one go is its own commit."""

from __future__ import annotations

import logging
import uuid

from fsspec import AbstractFileSystem

__all__ = ["is_object_store", "write_whole"]

logger = logging.getLogger(__name__)

# fsspec protocols of object stores (s3fs, gcsfs, adlfs, ossfs).
_OBJECT_STORE_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "oss"})


def is_object_store(fs: AbstractFileSystem) -> bool:
    """Whether ``fs`` is an object store (see the module docstring)."""
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return any(p in _OBJECT_STORE_PROTOCOLS for p in protocols)


def write_whole(fs: AbstractFileSystem, path: str, data: bytes) -> None:
    """Write ``data`` at ``path`` so that a reader sees all of it or nothing: one PUT on an
    object store, a file beside the target renamed over it elsewhere."""
    if is_object_store(fs):
        fs.pipe_file(path, data)
        return
    directory, _, name = path.rpartition("/")
    temp = f"{directory}/.{name}.inprogress-{uuid.uuid4().hex}"
    try:
        with fs.open(temp, "wb") as f:
            f.write(data)
        fs.mv(temp, path)
    except BaseException:
        try:
            if fs.exists(temp):
                fs.rm(temp)
        except OSError:
            # The original error is what matters; a leftover hidden file costs space only.
            logger.warning("could not delete %s", temp, exc_info=True)
        raise
