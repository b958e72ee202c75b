"""Which configuration values are hidden, and every place that shows configuration hides
them: Configuration's text, the REST API's configuration and environment views."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from weir.common import Configuration
from weir.core.sensitive_keys import (
    HIDDEN_VALUE,
    hide_sensitive,
    hide_sensitive_arguments,
    is_sensitive,
)
from weir.rest.handlers_jobmanager import get_job_manager_config, get_job_manager_environment

SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(
    "key",
    [
        # Flink's GlobalConfiguration.SENSITIVE_KEYS
        "s3.secret-key",
        "security.ssl.internal.key-password",
        "fs.azure.account.key.account.blob.core.windows.net",
        "metrics.reporter.datadog.apikey",
        "metrics.reporter.x.api-key",
        "auth-params",
        "gcp.service-key",
        "security.delegation.token.provider",
        "rest.basic-auth",
        "security.kerberos.jaas.config",
        "http-headers",
        "S3.SECRET-KEY",  # whatever the case
        # Weir's additions: the account of a secret key, a session token
        "s3.access-key",
        "s3.session.token",
    ],
)
def test_flinks_sensitive_keys_and_s3_credentials_are_sensitive(key):
    assert is_sensitive(key)


@pytest.mark.parametrize("key", ["s3.endpoint", "s3.path.style.access", "rest.port", "keys"])
def test_other_keys_are_shown(key):
    assert not is_sensitive(key)


def test_hiding_replaces_only_sensitive_values():
    shown = hide_sensitive({"s3.secret-key": SECRET, "s3.endpoint": "http://127.0.0.1:9000"})
    assert shown == {"s3.secret-key": HIDDEN_VALUE, "s3.endpoint": "http://127.0.0.1:9000"}


def test_command_lines_hide_sensitive_settings():
    argv = ["weir", "-D", f"s3.secret-key={SECRET}", f"-Ds3.access-key={SECRET}", "-Dk=v"]
    shown = hide_sensitive_arguments(argv)
    assert SECRET not in " ".join(shown)
    assert shown == ["weir", "-D", "s3.secret-key=******", "-Ds3.access-key=******", "-Dk=v"]


def test_configuration_text_hides_credentials():
    configuration = Configuration()
    configuration.set_string("s3.secret-key", SECRET)
    configuration.set_string("s3.access-key", SECRET)
    configuration.set_string("s3.endpoint", "http://127.0.0.1:9000")
    text = str(configuration)
    assert SECRET not in text
    assert "s3.secret-key=******" in text and "s3.endpoint=http://127.0.0.1:9000" in text


def test_the_rest_configuration_view_hides_credentials():
    view = SimpleNamespace(
        config={"s3.secret-key": SECRET, "s3.session.token": SECRET, "s3.endpoint": "e"}
    )
    entries = {e["key"]: e["value"] for e in get_job_manager_config(view, None)}
    assert entries == {"s3.secret-key": "******", "s3.session.token": "******", "s3.endpoint": "e"}


def test_the_rest_environment_view_hides_credentials_on_the_command_line(monkeypatch):
    monkeypatch.setattr("sys.argv", ["master", "-D", f"s3.secret-key={SECRET}"])
    environment = get_job_manager_environment(SimpleNamespace(), None)
    assert SECRET not in str(environment)
