"""``s3://bucket/key`` (and ``s3a://``): S3 and S3-compatible stores through s3fs, with the
settings and behaviour checkpoints, savepoints, high-availability storage and the file
connectors rely on. Registered for both protocols through the ``fsspec.specs`` entry
point, so ``fsspec.open`` and ``url_to_fs`` pick it up in every process that has Weir and
the ``s3`` extra (``pip install 'weir[s3]'``).

What it changes in s3fs, and why:

- Its settings are Flink's keys (``s3.endpoint``, ``s3.access-key``, ``s3.secret-key``,
  ``s3.path.style.access``), given to the process by ``weir.core.s3_settings.configure``
  (as Flink's ``FileSystem.initialize``); a setting left empty falls back to the AWS
  SDK's own sources (the ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
  ``AWS_SESSION_TOKEN``, ``AWS_ENDPOINT_URL`` and ``AWS_REGION`` environment variables,
  ``~/.aws``, a role).
- Listings are never cached: a FileSource that monitors a prefix, or a restore that looks
  for what an earlier attempt wrote, must see what other processes wrote since.
- ``makedirs`` of a key creates nothing (S3 has no directories) and never creates a
  bucket: a misspelt bucket is an error naming it, not a new bucket.
- Every error names the request, the bucket and the key, and S3's error code. Credentials
  S3 refuses raise :class:`S3CredentialsError`, a request the credentials may not make
  :class:`S3AccessDeniedError`, a missing bucket :class:`S3BucketNotFoundError`: no
  restart can cure them (``NonRecoverableError``), so a job fails at once saying so.

S3 has no rename, no append and no flush that makes bytes visible; a PUT replaces an
object whole. The code that writes checkpoints and files asks
``weir.core.object_stores.is_object_store`` and writes accordingly; the FileSink writes
S3 part files as multipart uploads (``weir.core.s3_multipart``).
"""

from __future__ import annotations

import logging
from typing import Any

from weir.core import s3_settings
from weir.core.errors import MissingDependencyError, NonRecoverableError

try:
    import s3fs
    from botocore.exceptions import BotoCoreError, ClientError
    from fsspec.asyn import sync_wrapper
except ModuleNotFoundError as _missing:  # pragma: no cover - depends on the installation
    _msg = (
        f"s3:// URLs need the Python package {_missing.name!r}, which is not installed; "
        "install Weir's s3 extra: pip install 'weir[s3]'"
    )
    raise MissingDependencyError(_msg) from _missing

__all__ = [
    "S3AccessDeniedError",
    "S3BucketNotFoundError",
    "S3CredentialsError",
    "S3FileSystem",
    "translate_error",
]

logger = logging.getLogger(__name__)

# S3's error codes for credentials it does not accept: a wrong access key id, a wrong
# secret (the signature does not match), a malformed session token. An expired token is
# not among them: the SDK's credential sources may renew it.
_REFUSED_CREDENTIALS = frozenset(
    {"InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "InvalidTokenId"}
)
_ACCESS_DENIED = frozenset({"AccessDenied", "AllAccessDisabled", "AccountProblem", "403"})
_NO_SUCH_BUCKET = frozenset({"NoSuchBucket"})
_NOT_FOUND = frozenset({"NoSuchKey", "404", "NotFound", "NoSuchUpload"})


# s3fs puts ``data`` in one request while it is under twice this (and 5 GiB, S3's limit).
_PUT_LIMIT = 5 << 30


class S3CredentialsError(NonRecoverableError, PermissionError):
    """S3 refused the credentials (a wrong access key id or secret key)."""


class S3AccessDeniedError(NonRecoverableError, PermissionError):
    """The credentials may not make this request on this bucket or key."""


class S3BucketNotFoundError(NonRecoverableError, FileNotFoundError):
    """The bucket does not exist."""


def _error_code(exc: BaseException) -> tuple[str, str]:
    """S3's error code and message in ``exc`` or the ClientError it was made from."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ClientError):
            error = seen.response.get("Error", {})
            return str(error.get("Code", "")), str(error.get("Message", "") or seen)
        seen = seen.__cause__ or seen.__context__
    return "", str(exc)


def translate_error(exc: BaseException, request: str, bucket: str, key: str) -> BaseException:
    """The error to raise for ``exc``, raised by S3 request ``request`` on ``bucket`` and
    ``key``: one naming all three, of the class the module docstring lists."""
    code, message = _error_code(exc)
    where = f"s3://{bucket}/{key}" if key else f"bucket {bucket!r}"
    said = f"{code}: {message}" if code and code not in message else message
    if code in _REFUSED_CREDENTIALS:
        return S3CredentialsError(
            f"S3 refused the credentials for {request} of {where} ({said}); check "
            "s3.access-key and s3.secret-key (or AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY) and s3.endpoint"
        )
    if code == "403":  # the answer to a HEAD request, which has no body to say more
        return S3AccessDeniedError(
            f"S3 answered 403 Forbidden to {request} of {where}: the credentials are wrong "
            f"or may not read bucket {bucket!r}; check s3.access-key and s3.secret-key (or "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) and the bucket's permissions"
        )
    if code in _ACCESS_DENIED:
        return S3AccessDeniedError(
            f"S3 denied {request} of {where} ({said or '403 Forbidden'}): the credentials "
            f"may not do that in bucket {bucket!r}; grant them access to it (for writes, "
            "s3:PutObject and the multipart upload actions), or use another bucket"
        )
    if code in _NO_SUCH_BUCKET or (request == "head_bucket" and code in _NOT_FOUND):
        return S3BucketNotFoundError(
            f"there is no bucket {bucket!r} at the S3 endpoint ({request} of {where}); "
            "create it, or fix the bucket in the URL"
        )
    if code in _NOT_FOUND or isinstance(exc, FileNotFoundError):
        return FileNotFoundError(f"{request}: no such object {where} ({said})")
    if isinstance(exc, OSError):
        return type(exc)(exc.errno, f"S3 {request} of {where} failed: {said}")
    if isinstance(exc, (ClientError, BotoCoreError)):
        return OSError(f"S3 {request} of {where} failed: {said}")
    return exc


class S3FileSystem(s3fs.S3FileSystem):  # type: ignore[misc]
    """s3fs's S3FileSystem with Weir's settings, as the module docstring describes."""

    protocol = ("s3", "s3a")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self._cached:
            return
        # s3_settings.configure drops the cached instances when the settings change.
        given = s3_settings.current()
        kwargs.setdefault("use_listings_cache", False)
        if given.endpoint and "endpoint_url" not in kwargs:
            kwargs["endpoint_url"] = given.endpoint
        if given.access_key and not any(k in kwargs for k in ("key", "username", "anon")):
            kwargs["key"] = given.access_key
            kwargs["secret"] = given.secret_key
            if given.session_token:
                kwargs["token"] = given.session_token
        if given.path_style_access:
            config_kwargs = dict(kwargs.get("config_kwargs") or {})
            config_kwargs["s3"] = {**config_kwargs.get("s3", {}), "addressing_style": "path"}
            kwargs["config_kwargs"] = config_kwargs
        super().__init__(*args, **kwargs)
        self._buckets_seen: set[str] = set()

    async def _call_s3(self, method: str, *akwarglist: Any, **kwargs: Any) -> Any:
        try:
            return await super()._call_s3(method, *akwarglist, **kwargs)
        except (OSError, ClientError, BotoCoreError) as exc:
            bucket = str(kwargs.get("Bucket", ""))
            key = str(kwargs.get("Key") or kwargs.get("Prefix") or "")
            translated = translate_error(exc, method, bucket, key)
            if translated is exc:
                raise
            raise translated from exc

    async def _mkdir(
        self, path: str, acl: Any = False, create_parents: bool = True, **kwargs: Any
    ) -> None:
        bucket, key, _ = self.split_path(self._strip_protocol(path).rstrip("/"))
        if not key:
            await super()._mkdir(path, acl=acl, create_parents=create_parents, **kwargs)
            return
        await self._check_bucket(bucket)

    async def _makedirs(self, path: str, exist_ok: bool = False) -> None:
        bucket, key, _ = self.split_path(self._strip_protocol(path).rstrip("/"))
        if not key:
            await super()._makedirs(path, exist_ok=exist_ok)
            return
        await self._check_bucket(bucket)

    async def _check_bucket(self, bucket: str) -> None:
        """That ``bucket`` exists and these credentials reach it (once per bucket)."""
        if bucket in self._buckets_seen:
            return
        try:
            await self._call_s3("head_bucket", Bucket=bucket)
        except S3AccessDeniedError:
            # S3 answers a HEAD without a body, so "403" may be wrong credentials or a
            # missing permission: a GET's answer names which (or the HEAD's error stands).
            await self._call_s3("list_objects_v2", Bucket=bucket, MaxKeys=1)
            raise
        self._buckets_seen.add(bucket)

    async def _pipe_file(
        self, path: str, data: bytes, chunksize: int = _PUT_LIMIT, **kwargs: Any
    ) -> Any:
        """One PUT up to S3's limit for one (s3fs switches to a multipart upload from
        100 MB): an upload cut short leaves nothing, where a multipart one would leave its
        parts until aborted."""
        return await super()._pipe_file(path, data, chunksize=chunksize, **kwargs)

    mkdir = sync_wrapper(_mkdir)
    makedirs = sync_wrapper(_makedirs)
    call_s3 = sync_wrapper(_call_s3)

    # -- multipart uploads (the FileSink's part files, large checkpoint files) -------------
    def create_multipart_upload(self, path: str) -> str:
        """Start a multipart upload of the object at ``path``; returns its upload id. The
        object shows only once the upload is completed."""
        bucket, key, _ = self.split_path(path)
        reply = self.call_s3("create_multipart_upload", Bucket=bucket, Key=key)
        return str(reply["UploadId"])

    def upload_part(self, path: str, upload_id: str, number: int, data: bytes) -> str:
        """Upload part ``number`` (from 1) of an upload; returns its ETag. Uploading a
        number again replaces that part."""
        bucket, key, _ = self.split_path(path)
        reply = self.call_s3(
            "upload_part",
            Bucket=bucket,
            Key=key,
            UploadId=upload_id,
            PartNumber=number,
            Body=data,
        )
        return str(reply["ETag"])

    def upload_part_copy(self, path: str, upload_id: str, number: int, source: str) -> str:
        """Make part ``number`` of an upload a copy of the object at ``source``, in S3."""
        bucket, key, _ = self.split_path(path)
        source_bucket, source_key, _ = self.split_path(source)
        reply = self.call_s3(
            "upload_part_copy",
            Bucket=bucket,
            Key=key,
            UploadId=upload_id,
            PartNumber=number,
            CopySource={"Bucket": source_bucket, "Key": source_key},
        )
        return str(reply["CopyPartResult"]["ETag"])

    def complete_multipart_upload(
        self, path: str, upload_id: str, parts: list[tuple[int, str]]
    ) -> None:
        """Make the object at ``path`` the given parts, in order, at once; parts of the
        upload not listed are dropped. FileNotFoundError when there is no such upload
        (completed or aborted before)."""
        bucket, key, _ = self.split_path(path)
        self.call_s3(
            "complete_multipart_upload",
            Bucket=bucket,
            Key=key,
            UploadId=upload_id,
            MultipartUpload={"Parts": [{"PartNumber": n, "ETag": etag} for n, etag in parts]},
        )
        self.invalidate_cache(path)

    def abort_multipart_upload(self, path: str, upload_id: str) -> None:
        """Drop an upload and its parts; no error when it is gone already."""
        bucket, key, _ = self.split_path(path)
        try:
            self.call_s3("abort_multipart_upload", Bucket=bucket, Key=key, UploadId=upload_id)
        except FileNotFoundError:
            pass  # completed or aborted before: nothing left to drop

    def list_multipart_uploads(self, prefix: str) -> list[tuple[str, str]]:
        """The unfinished uploads of objects under ``prefix``: (path, upload id) pairs."""
        bucket, key, _ = self.split_path(prefix)
        found: list[tuple[str, str]] = []
        request: dict[str, Any] = {"Bucket": bucket, "Prefix": key}
        while True:
            reply = self.call_s3("list_multipart_uploads", **request)
            found += [
                (f"{bucket}/{u['Key']}", str(u["UploadId"])) for u in reply.get("Uploads", [])
            ]
            if not reply.get("IsTruncated"):
                return found
            request["KeyMarker"] = reply.get("NextKeyMarker", "")
            request["UploadIdMarker"] = reply.get("NextUploadIdMarker", "")

    def abort_multipart_uploads(self, prefix: str) -> int:
        """Abort every unfinished upload under ``prefix``; returns how many there were."""
        uploads = self.list_multipart_uploads(prefix)
        for path, upload_id in uploads:
            self.abort_multipart_upload(path, upload_id)
        return len(uploads)
