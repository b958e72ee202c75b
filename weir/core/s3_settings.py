"""The ``s3.*`` settings of this process (Flink's ``FileSystem.initialize``): what every S3
file system it opens uses (``weir.core.s3_file_system``), free of s3fs so that every
process can take them whether or not it ever opens ``s3://``.

The master and each TaskManager take their cluster's configuration when they start
(``configure``); a JobMaster and each task then take the ``s3.*`` keys their job sets, over
the cluster's, so that a job run on the embedded cluster (whose configuration is the
program's) or given its own endpoint reaches its bucket. The settings are per process,
as Flink's: jobs that share a TaskManager and set different ``s3.*`` keys see those of the
job deployed last."""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from weir.core import config as cfg

__all__ = ["S3Settings", "configure", "current"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class S3Settings:
    """What Flink's ``s3.*`` keys say; empty strings leave the AWS SDK's defaults."""

    endpoint: str = ""
    access_key: str = ""
    secret_key: str = ""
    session_token: str = ""
    path_style_access: bool = False
    upload_min_part_size: int = cfg.S3_UPLOAD_MIN_PART_SIZE.default
    upload_max_concurrent_uploads: int = cfg.S3_UPLOAD_MAX_CONCURRENT_UPLOADS.default

    def __repr__(self) -> str:  # never the credentials
        return (
            f"S3Settings(endpoint={self.endpoint!r}, credentials="
            f"{'given' if self.access_key else 'from the AWS SDK'}, "
            f"path_style_access={self.path_style_access}, "
            f"upload_min_part_size={self.upload_min_part_size}, "
            f"upload_max_concurrent_uploads={self.upload_max_concurrent_uploads})"
        )


_OPTIONS: dict[str, cfg.ConfigOption[Any]] = {
    "endpoint": cfg.S3_ENDPOINT,
    "access_key": cfg.S3_ACCESS_KEY,
    "secret_key": cfg.S3_SECRET_KEY,
    "session_token": cfg.S3_SESSION_TOKEN,
    "path_style_access": cfg.S3_PATH_STYLE_ACCESS,
    "upload_min_part_size": cfg.S3_UPLOAD_MIN_PART_SIZE,
    "upload_max_concurrent_uploads": cfg.S3_UPLOAD_MAX_CONCURRENT_UPLOADS,
}


_lock = threading.Lock()
_current = S3Settings()


def current() -> S3Settings:
    """The settings of this process."""
    return _current


def configure(config: Mapping[str, str]) -> None:
    """Take the ``s3.*`` keys ``config`` sets; the others keep what an earlier call gave
    them. S3 file systems opened from now on use the result; those cached before are
    dropped when it changes."""
    global _current
    given = {name: opt for name, opt in _OPTIONS.items() if opt.key in config}
    if not given:
        return
    with _lock:
        values = {name: getattr(_current, name) for name in _OPTIONS}
        for name, opt in given.items():
            value: Any = cfg.get(config, opt)
            values[name] = value.strip() if isinstance(value, str) and name == "endpoint" else value
        merged = S3Settings(**values)
        if merged == _current:
            return
        _current = merged
    logger.info("S3 file systems use %r", merged)
    module = sys.modules.get("weir.core.s3_file_system")
    if module is not None:
        module.S3FileSystem.clear_instance_cache()
