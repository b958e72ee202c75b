"""Security keys (Flink's SecurityOptions, with PEM files instead of key stores)."""

from __future__ import annotations

from weir.core.config_option import (
    _option,
    _parse_bool,
)

# --- security (Flink's SecurityOptions, with PEM files instead of key stores) ---------
SSL_INTERNAL_ENABLED = _option(
    "security.ssl.internal.enabled",
    False,
    _parse_bool,
    "Mutual TLS for everything inside the cluster: the ResourceManager's, JobMasters' and "
    "TaskExecutors' gRPC endpoints and the TaskManagers' data connections. Needs "
    "security.ssl.internal.cert, .key and .trust-cert.",
)
SSL_INTERNAL_CERT = _option(
    "security.ssl.internal.cert",
    "",
    str,
    "PEM certificate (chain) every cluster process presents, as server and as client. "
    "The same path must hold it on every host. `weir certs` makes one.",
)
SSL_INTERNAL_KEY = _option(
    "security.ssl.internal.key", "", str, "PEM private key of security.ssl.internal.cert."
)
SSL_INTERNAL_TRUST_CERT = _option(
    "security.ssl.internal.trust-cert",
    "",
    str,
    "PEM certificate(s) of the CA whose certificates the cluster's processes accept.",
)
SSL_REST_ENABLED = _option(
    "security.ssl.rest.enabled",
    False,
    _parse_bool,
    "TLS on what clients use: the Dispatcher's gRPC endpoint (weir run, list, cancel). "
    "Needs security.ssl.rest.cert and .key on the master, .trust-cert on clients.",
)
SSL_REST_CERT = _option(
    "security.ssl.rest.cert", "", str, "PEM certificate (chain) of the Dispatcher, and of clients."
)
SSL_REST_KEY = _option(
    "security.ssl.rest.key", "", str, "PEM private key of security.ssl.rest.cert."
)
SSL_REST_TRUST_CERT = _option(
    "security.ssl.rest.trust-cert",
    "",
    str,
    "PEM certificate(s) of the CA that clients trust for the Dispatcher (and the Dispatcher "
    "for clients, with security.ssl.rest.authentication-enabled).",
)
# Flink's default is false: a REST client need not show a certificate. Ours is true,
# because a client of the Dispatcher submits code the cluster runs; clients that cannot
# hold a certificate turn it off and present security.auth.token instead.
SSL_REST_AUTHENTICATION_ENABLED = _option(
    "security.ssl.rest.authentication-enabled",
    True,
    _parse_bool,
    "With security.ssl.rest.enabled: clients must present a certificate of the trusted CA "
    "too (mutual TLS). Off: any client may connect over TLS, and only security.auth.token "
    "keeps strangers out.",
)
SSL_VERIFY_HOSTNAME = _option(
    "security.ssl.verify-hostname",
    True,
    _parse_bool,
    "Check that a server's certificate names the host it was reached at. Off: the "
    "certificate must name weir-cluster instead (`weir certs` always adds it), so one "
    "certificate serves hosts whose addresses are not known in advance.",
)
AUTH_TOKEN = _option(
    "security.auth.token",
    "",
    str,
    "A shared secret every client and cluster process sends with each call and data "
    "connection, compared in constant time; calls without it are refused (UNAUTHENTICATED). "
    "Sent in the clear unless TLS is on.",
)
