"""S3 keys (Flink's S3 file system factories: ``s3.*``, mirrored to ``s3://`` and
``s3a://`` URLs). Each is optional: unset, the AWS SDK's own sources apply (the
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``/``AWS_ENDPOINT_URL``/
``AWS_REGION`` environment variables, ``~/.aws``, an instance role)."""

from __future__ import annotations

from weir.core.config_option import _option, _parse_bool, _positive_int, parse_memory_bytes

# S3's limits on the parts of a multipart upload: every part but the last is 5 MiB to
# 5 GiB (AbstractS3FileSystemFactory checks the same bounds).
S3_MIN_PART_SIZE = 5 << 20
S3_MAX_PART_SIZE = 5 << 30


def _part_size(text: str) -> int:
    value = parse_memory_bytes(text)
    if not S3_MIN_PART_SIZE <= value <= S3_MAX_PART_SIZE:
        msg = (
            f"expected a part size from 5 mb to 5 gb (S3's limits for a multipart upload's "
            f"parts), got {text!r}"
        )
        raise ValueError(msg)
    return value


S3_ENDPOINT = _option(
    "s3.endpoint",
    "",
    str,
    "URL of the S3 service (an S3-compatible store: http://minio:9000); empty: AWS's.",
)
S3_ACCESS_KEY = _option(
    "s3.access-key", "", str, "Access key id; empty: the AWS SDK's credential sources."
)
S3_SECRET_KEY = _option(
    "s3.secret-key",
    "",
    str,
    "Secret access key (hidden wherever configuration is shown); empty: the AWS SDK's.",
)
# Flink forwards s3.* keys to Hadoop's fs.s3a.*, so this is fs.s3a.session.token there.
S3_SESSION_TOKEN = _option(
    "s3.session.token",
    "",
    str,
    "Session token of temporary credentials (with s3.access-key and s3.secret-key).",
)
S3_PATH_STYLE_ACCESS = _option(
    "s3.path.style.access",
    False,
    _parse_bool,
    "Address buckets as endpoint/bucket/key rather than bucket.endpoint/key (most "
    "S3-compatible stores need it).",
)
# What a FileSink buffers per in-progress part file before uploading a part of its
# multipart upload: S3's minimum, so a checkpoint leaves at most this much to put aside.
S3_UPLOAD_MIN_PART_SIZE = _option(
    "s3.upload.min.part.size",
    S3_MIN_PART_SIZE,
    _part_size,
    "Size of the parts a FileSink uploads to S3 (5 mb to 5 gb).",
)
# Parts in flight per part file: uploads overlap the task's writing, and each holds a part
# in memory, so this bounds a FileSink's memory at (this + 1) parts per open part file.
S3_UPLOAD_MAX_CONCURRENT_UPLOADS = _option(
    "s3.upload.max.concurrent.uploads",
    2,
    _positive_int,
    "Parts a FileSink uploads at once per part file, beside the task's writing.",
)
