"""The s3.* keys a process takes (weir.core.s3_settings), the S3 file system they configure,
and how S3's errors become Weir's (weir.core.s3_file_system.translate_error)."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from weir.core import config as cfg
from weir.core import s3_settings
from weir.core.errors import ConfigurationError, NonRecoverableError
from weir.core.s3_file_system import (
    S3AccessDeniedError,
    S3BucketNotFoundError,
    S3CredentialsError,
    S3FileSystem,
    translate_error,
)
from weir.core.throwable_classifier import ThrowableType, throwable_type


@pytest.fixture(autouse=True)
def _fresh_settings(monkeypatch):
    monkeypatch.setattr(s3_settings, "_current", s3_settings.S3Settings())
    S3FileSystem.clear_instance_cache()
    yield
    S3FileSystem.clear_instance_cache()


def test_flinks_keys_configure_every_s3_file_system_opened_after():
    s3_settings.configure(
        {
            "s3.endpoint": " http://127.0.0.1:9000 ",
            "s3.access-key": "reader",
            "s3.secret-key": "its-secret",
            "s3.path.style.access": "true",
        }
    )
    fs = S3FileSystem()
    assert fs.endpoint_url == "http://127.0.0.1:9000"
    assert (fs.key, fs.secret) == ("reader", "its-secret")
    assert fs.config_kwargs["s3"]["addressing_style"] == "path"
    # Listings are read anew every time (another process may have written since).
    assert fs.dircache.use_listings_cache is False


def test_a_later_configuration_keeps_the_keys_it_does_not_set():
    s3_settings.configure({"s3.endpoint": "http://a:9000", "s3.access-key": "k"})
    s3_settings.configure({"s3.endpoint": "http://b:9000"})
    assert s3_settings.current().endpoint == "http://b:9000"
    assert s3_settings.current().access_key == "k"
    assert S3FileSystem().endpoint_url == "http://b:9000"


def test_without_keys_the_aws_sdk_finds_credentials_itself():
    s3_settings.configure({"parallelism.default": "2"})
    fs = S3FileSystem()
    assert fs.key is None and fs.secret is None and fs.endpoint_url is None


def test_the_settings_never_print_credentials():
    s3_settings.configure({"s3.access-key": "AKIAEXAMPLE", "s3.secret-key": "its-secret"})
    text = repr(s3_settings.current())
    assert "AKIAEXAMPLE" not in text and "its-secret" not in text


def test_part_sizes_are_within_s3s_limits():
    with pytest.raises(ConfigurationError, match="5 mb to 5 gb"):
        cfg.validate({"s3.upload.min.part.size": "1 mb"})
    assert cfg.get({"s3.upload.min.part.size": "8 mb"}, cfg.S3_UPLOAD_MIN_PART_SIZE) == 8 << 20


def _client_error(code: str, message: str = "", operation: str = "PutObject") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


@pytest.mark.parametrize("code", ["InvalidAccessKeyId", "SignatureDoesNotMatch"])
def test_refused_credentials_fail_the_job_at_once_naming_the_keys(code):
    error = translate_error(_client_error(code, "refused"), "put_object", "bucket", "a/b")
    assert isinstance(error, S3CredentialsError) and isinstance(error, PermissionError)
    assert throwable_type(error) is ThrowableType.NON_RECOVERABLE_ERROR
    assert "s3://bucket/a/b" in str(error) and "s3.secret-key" in str(error)


def test_a_denied_request_names_the_bucket_and_the_key():
    error = translate_error(
        _client_error("AccessDenied", "Access Denied."), "put_object", "logs", "out/part-0"
    )
    assert isinstance(error, S3AccessDeniedError)
    assert isinstance(error, NonRecoverableError)
    assert "put_object of s3://logs/out/part-0" in str(error) and "'logs'" in str(error)


def test_a_missing_bucket_is_named():
    error = translate_error(_client_error("NoSuchBucket"), "head_bucket", "typo", "")
    assert isinstance(error, S3BucketNotFoundError) and isinstance(error, FileNotFoundError)
    assert "no bucket 'typo'" in str(error)


def test_a_missing_key_stays_a_file_not_found_error_anyone_may_expect():
    error = translate_error(_client_error("NoSuchKey"), "get_object", "b", "k")
    assert type(error) is FileNotFoundError and "s3://b/k" in str(error)
    assert throwable_type(error) is ThrowableType.RECOVERABLE_ERROR


def test_an_unreachable_endpoint_is_left_to_the_restart_strategy():
    exc = EndpointConnectionError(endpoint_url="http://127.0.0.1:1")
    error = translate_error(exc, "put_object", "b", "k")
    assert isinstance(error, OSError) and "s3://b/k" in str(error)
    assert throwable_type(error) is ThrowableType.RECOVERABLE_ERROR
