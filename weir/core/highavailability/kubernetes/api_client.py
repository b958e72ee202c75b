"""A small client of the Kubernetes API for what high availability needs: ConfigMaps read,
created, replaced by compare-and-swap on their ``resourceVersion``, deleted, and watched.

Errors, translated here from HTTP (one boundary, as STYLE.md asks)::

    KubernetesApiError                      the API server refused a request
    ├── KubernetesConflictError             409: changed since read, or exists already
    ├── KubernetesNotFoundError (KeyError)  404
    ├── KubernetesForbiddenError (PermissionError)  401/403: the credentials may not do it
    ├── KubernetesInvalidError (ValueError) 413/422: e.g. a ConfigMap above 1 MiB
    └── KubernetesUnavailableError (ConnectionError)  no answer, or 5xx/429
            ``maybe_applied``: a write that may have been applied (the request was sent)

Threading: any thread may call any method; each thread has an HTTP session of its own.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import requests
import urllib3

from weir.core.errors import WeirError
from weir.core.highavailability.kubernetes.connection import KubernetesConnection

logger = logging.getLogger(__name__)


class KubernetesApiError(WeirError):
    def __init__(self, message: str, status: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


class KubernetesConflictError(KubernetesApiError):
    """409: the object changed since it was read (Conflict), or exists (AlreadyExists)."""


class KubernetesNotFoundError(KubernetesApiError, KeyError):
    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class KubernetesForbiddenError(KubernetesApiError, PermissionError):
    pass


class KubernetesInvalidError(KubernetesApiError, ValueError):
    pass


class KubernetesUnavailableError(KubernetesApiError, ConnectionError):
    def __init__(self, message: str, status: int = 0, *, maybe_applied: bool = False) -> None:
        super().__init__(message, status)
        self.maybe_applied = maybe_applied


@dataclass(frozen=True, slots=True)
class ConfigMap:
    namespace: str
    name: str
    data: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    resource_version: str = ""
    """Empty for an object not read from the API server."""

    def to_json(self) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if self.labels:
            metadata["labels"] = dict(self.labels)
        if self.annotations:
            metadata["annotations"] = dict(self.annotations)
        if self.resource_version:
            metadata["resourceVersion"] = self.resource_version
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata,
            "data": dict(self.data),
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ConfigMap:
        metadata = obj.get("metadata") or {}
        return cls(
            namespace=str(metadata.get("namespace", "")),
            name=str(metadata.get("name", "")),
            data=dict(obj.get("data") or {}),
            annotations=dict(metadata.get("annotations") or {}),
            labels=dict(metadata.get("labels") or {}),
            resource_version=str(metadata.get("resourceVersion", "")),
        )


# A watch is ended by the API server after this long and started again (client-go picks
# 5-10 minutes); the read timeout of its stream is a little longer, so that a server that
# vanished without closing the connection is noticed.
_WATCH_SECONDS = 300
_WATCH_READ_SLACK_S = 30.0
# A TCP and TLS handshake with the API server takes milliseconds; one that has not
# completed in this long will not, and the caller's own deadline may be shorter still.
_CONNECT_TIMEOUT_S = 5.0


class KubernetesApiClient:
    """``timeout_s`` bounds each request unless a call gives its own."""

    def __init__(self, connection: KubernetesConnection, timeout_s: float = 10.0) -> None:
        self.connection = connection
        self._timeout_s = timeout_s
        self._local = threading.local()
        self._sessions: list[requests.Session] = []
        self._sessions_lock = threading.Lock()

    # -- ConfigMaps ----------------------------------------------------------------------
    def get_config_map(
        self, namespace: str, name: str, timeout_s: float | None = None
    ) -> ConfigMap | None:
        """The ConfigMap, or None when there is none of that name."""
        try:
            obj = self._request("GET", _path(namespace, name), timeout_s=timeout_s)
        except KubernetesNotFoundError:
            return None
        return ConfigMap.from_json(obj)

    def create_config_map(self, config_map: ConfigMap, timeout_s: float | None = None) -> ConfigMap:
        """Raises KubernetesConflictError when one of that name exists already."""
        body = config_map.to_json()
        body["metadata"].pop("resourceVersion", None)
        obj = self._request(
            "POST", _path(config_map.namespace), body=body, timeout_s=timeout_s, write=True
        )
        return ConfigMap.from_json(obj)

    def replace_config_map(
        self, config_map: ConfigMap, timeout_s: float | None = None
    ) -> ConfigMap:
        """Replace it if it is still at ``config_map.resource_version`` (compare-and-swap);
        KubernetesConflictError when it changed since, KubernetesNotFoundError when gone."""
        if not config_map.resource_version:
            msg = f"replacing ConfigMap {config_map.name} needs the resourceVersion it was read at"
            raise ValueError(msg)
        obj = self._request(
            "PUT",
            _path(config_map.namespace, config_map.name),
            body=config_map.to_json(),
            timeout_s=timeout_s,
            write=True,
        )
        return ConfigMap.from_json(obj)

    def list_config_maps(
        self, namespace: str, *, label_selector: str = "", field_selector: str = ""
    ) -> tuple[list[ConfigMap], str]:
        """The matching ConfigMaps and the list's resourceVersion (to watch from)."""
        params = {"labelSelector": label_selector, "fieldSelector": field_selector}
        obj = self._request("GET", _path(namespace), params={k: v for k, v in params.items() if v})
        items = [
            ConfigMap.from_json({**item, "kind": "ConfigMap"}) for item in obj.get("items", [])
        ]
        return items, str((obj.get("metadata") or {}).get("resourceVersion", ""))

    def watch_config_map(self, namespace: str, name: str, resource_version: str) -> ConfigMapWatch:
        """A watch of one ConfigMap's changes after ``resource_version`` (see
        ``ConfigMapWatch``). Raises KubernetesApiError when it cannot be opened."""
        params = {
            "watch": "true",
            "fieldSelector": f"metadata.name={name}",
            "resourceVersion": resource_version,
            "timeoutSeconds": str(_WATCH_SECONDS),
            "allowWatchBookmarks": "false",
        }
        url = self.connection.server + _path(namespace)
        try:
            response = self._session().get(
                url,
                params=params,
                headers=self._headers(),
                stream=True,
                timeout=(_CONNECT_TIMEOUT_S, _WATCH_SECONDS + _WATCH_READ_SLACK_S),
            )
        except requests.RequestException as exc:
            raise _unavailable(exc, "GET", url, sent=False) from exc
        if response.status_code >= 400:
            with response:
                raise _error(response, "GET", url)
        return ConfigMapWatch(response, url)

    # -- plumbing ------------------------------------------------------------------------
    def close(self) -> None:
        with self._sessions_lock:
            sessions, self._sessions = self._sessions, []
        for session in sessions:
            session.close()
        self.connection.close()

    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            connection = self.connection
            session.verify = (connection.ca_file or True) if connection.verify else False
            if connection.client_cert and connection.client_key:
                session.cert = (connection.client_cert, connection.client_key)
            # The API server's address, never a proxy of the environment.
            session.trust_env = False
            self._local.session = session
            with self._sessions_lock:
                self._sessions.append(session)
        return session

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        token = self.connection.bearer_token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def _request(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        write: bool = False,
    ) -> dict[str, Any]:
        url = self.connection.server + path
        timeout = self._timeout_s if timeout_s is None else timeout_s
        try:
            response = self._session().request(
                method,
                url,
                json=body,
                params=params,
                headers=self._headers(),
                timeout=(min(_CONNECT_TIMEOUT_S, timeout), timeout),
            )
        except requests.RequestException as exc:
            # A request that never reached the server changed nothing; one that did may
            # have been applied before its answer was lost.
            raise _unavailable(exc, method, url, sent=write and _request_sent(exc)) from exc
        if response.status_code >= 400:
            raise _error(response, method, url, write=write)
        result: dict[str, Any] = response.json()
        return result


class ConfigMapWatch:
    """The events of an open watch: ``("ADDED"|"MODIFIED", cm)`` and ``("DELETED",
    None)``, until the server ends the watch. Iterating raises KubernetesConflictError
    (410) when the version watched from is too old (list again), KubernetesApiError when
    the connection fails. ``close()`` from another thread ends it at once."""

    def __init__(self, response: requests.Response, url: str) -> None:
        self._response = response
        self._url = url
        self._closed = False

    def close(self) -> None:
        """End the watch from any thread: the connection's socket is shut down, which
        wakes a thread reading it (closing the response would wait for that read)."""
        self._closed = True
        connection = getattr(self._response.raw, "connection", None)
        sock = getattr(connection, "sock", None)
        if sock is not None:
            # The plain socket's shutdown, below TLS: the reading thread's TLS object is
            # left as it is and sees the end of the stream.
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)

    def __iter__(self) -> Iterator[tuple[str, ConfigMap | None]]:
        try:
            for line in self._response.iter_lines():
                if not line:
                    continue
                event = json.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    code = int(obj.get("code", 0))
                    message = str(obj.get("message", "watch error"))
                    if code == 410:
                        raise KubernetesConflictError(message, 410, "Expired")
                    raise KubernetesApiError(message, code, str(obj.get("reason", "")))
                if kind == "DELETED":
                    yield kind, None
                elif kind in ("ADDED", "MODIFIED"):
                    yield kind, ConfigMap.from_json({**obj, "kind": "ConfigMap"})
        except Exception as exc:
            if self._closed:
                return  # closed on purpose: whatever the read saw of it is no error
            if not isinstance(
                exc, (requests.RequestException, urllib3.exceptions.HTTPError, OSError, ValueError)
            ):
                raise
            raise _unavailable(exc, "GET", self._url, sent=True) from exc
        finally:
            self._response.close()


def _path(namespace: str, name: str = "") -> str:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    return f"{base}/{name}" if name else base


def _request_sent(exc: requests.RequestException) -> bool:
    """Whether a failed request may have reached the server (its answer was lost), rather
    than failing while connecting (nothing was sent)."""
    if isinstance(exc, (requests.ConnectTimeout, requests.exceptions.SSLError)):
        return False
    cause = exc.args[0] if exc.args else None
    return not isinstance(getattr(cause, "reason", None), urllib3.exceptions.NewConnectionError)


def _unavailable(
    exc: Exception, method: str, url: str, *, sent: bool
) -> KubernetesUnavailableError:
    msg = f"the Kubernetes API server did not answer {method} {url}: {type(exc).__name__}"
    return KubernetesUnavailableError(msg, maybe_applied=sent)


def _error(
    response: requests.Response, method: str, url: str, *, write: bool = False
) -> KubernetesApiError:
    status = response.status_code
    try:
        status_obj = response.json()
        message = str(status_obj.get("message") or response.text)
        reason = str(status_obj.get("reason") or "")
    except ValueError:
        message, reason = response.text.strip()[:500], ""
    text = f"{method} {url}: {status} {reason}: {message}"
    if status == 409:
        return KubernetesConflictError(text, status, reason)
    if status == 404:
        return KubernetesNotFoundError(text, status, reason)
    if status in (401, 403):
        return KubernetesForbiddenError(text, status, reason)
    if status in (413, 422, 400):
        return KubernetesInvalidError(text, status, reason)
    if status >= 500 or status == 429:
        # A server error may come after the write was stored (etcd's answer timed out).
        return KubernetesUnavailableError(text, status, maybe_applied=write and status >= 500)
    return KubernetesApiError(text, status, reason)
