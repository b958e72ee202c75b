"""Which configuration values are secrets: Flink's ``GlobalConfiguration.isSensitive``, the
one rule every place that shows configuration applies (``Configuration``'s text, the REST
API's configuration views, the dashboard that reads them, logs).

A key is sensitive when its lower-cased name contains one of Flink's
``SENSITIVE_KEYS``. Beyond Flink's list, ``access-key``: ``s3.access-key`` names the
account a secret key belongs to, and Weir shows neither (Flink shows the access key)."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["HIDDEN_VALUE", "hide_sensitive", "hide_sensitive_arguments", "is_sensitive"]

# GlobalConfiguration.SENSITIVE_KEYS (Flink 2), then Weir's own additions.
_SENSITIVE = (
    "password",
    "secret",
    "fs.azure.account.key",
    "apikey",
    "api-key",
    "auth-params",
    "service-key",
    "token",
    "basic-auth",
    "jaas.config",
    "http-headers",
    "access-key",
)

HIDDEN_VALUE = "******"
"""What a sensitive value is shown as (Flink's ``GlobalConfiguration.HIDDEN_CONTENT``)."""


def is_sensitive(key: str) -> bool:
    """Whether the value of configuration key ``key`` must never be shown."""
    lowered = key.lower()
    return any(word in lowered for word in _SENSITIVE)


def hide_sensitive(entries: Mapping[str, str]) -> dict[str, str]:
    """``entries`` with every sensitive value replaced by ``HIDDEN_VALUE``."""
    return {k: HIDDEN_VALUE if is_sensitive(k) else v for k, v in entries.items()}


def hide_sensitive_arguments(argv: list[str]) -> list[str]:
    """A command line with the values of sensitive ``key=value`` arguments hidden
    (``-D s3.secret-key=...``, ``-Ds3.secret-key=...``, ``--s3.secret-key=...``)."""
    shown = []
    for arg in argv:
        key, equals, _ = arg.partition("=")
        shown.append(f"{key}={HIDDEN_VALUE}" if equals and is_sensitive(key) else arg)
    return shown
