"""A recorder of Kubernetes API requests: an HTTPS server on 127.0.0.1 that writes down
every request a client makes and answers just enough for Spark's Kubernetes scheduler
backend to go on making them. It is not a cluster: nothing is scheduled, no pod runs, no
state is kept beyond the pods it was asked to create (so that lists and gets answer them).

What it answers:
- ``GET`` of the driver pod it is told about: a running, ready Pod with a uid (Spark reads
  it to make it the owner of every executor pod);
- ``POST`` of a pod, ConfigMap or PersistentVolumeClaim: the object back, with a uid and
  a resourceVersion (201);
- ``GET`` of a list (pods, ConfigMaps, PVCs): the pods created so far that match its label
  selector, else an empty list; a watch (``watch=true``) is held open, sending nothing,
  until the recorder stops;
- ``DELETE``: a Status of Success;
- anything else: 404 with a Status, recorded as well.
"""

from __future__ import annotations

import base64
import hashlib
import json
import ssl
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

# RFC 6455's constant for the handshake's Sec-WebSocket-Accept.
_WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class _State:
    namespace: str
    driver_pod: str
    driver_uid: str = field(default_factory=lambda: str(uuid.uuid4()))
    requests: list[RecordedRequest] = field(default_factory=list)
    created: dict[str, dict[str, Any]] = field(default_factory=dict)
    lock: threading.Condition = field(default_factory=threading.Condition)
    stopping: threading.Event = field(default_factory=threading.Event)


def _matches(labels: dict[str, str], selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _record(self) -> tuple[str, dict[str, list[str]], Any]:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        query = parse_qs(parts.query)
        state = self.server.state
        with state.lock:
            state.requests.append(
                RecordedRequest(self.command, parts.path, query, dict(self.headers), body)
            )
            state.lock.notify_all()
        return parts.path, query, body

    def _answer(self, status: int, document: dict[str, Any]) -> None:
        data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _status(self, code: int, reason: str, message: str) -> None:
        self._answer(
            code,
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success" if code < 400 else "Failure",
                "reason": reason,
                "message": message,
                "code": code,
            },
        )

    def do_GET(self) -> None:
        path, query, _ = self._record()
        state = self.server.state
        ns = f"/api/v1/namespaces/{state.namespace}"
        if path == f"{ns}/pods/{state.driver_pod}":
            self._answer(200, self._driver_pod())
            return
        if path.startswith(f"{ns}/pods/"):
            name = path.rsplit("/", 1)[1]
            with state.lock:
                pod = state.created.get(f"pods/{name}")
            if pod is not None:
                self._answer(200, pod)
            else:
                self._status(404, "NotFound", f'pods "{name}" not found')
            return
        kind = path.rsplit("/", 1)[-1]
        if path.startswith(ns) and kind in ("pods", "configmaps", "persistentvolumeclaims"):
            if query.get("watch") == ["true"]:
                self._hold_watch()
                return
            selector = query.get("labelSelector", [""])[0]
            fields = query.get("fieldSelector", [""])[0]
            with state.lock:
                objects = dict(state.created)
            if kind == "pods":
                objects[f"pods/{state.driver_pod}"] = self._driver_pod()
            items = [
                obj
                for key, obj in objects.items()
                if key.startswith(f"{kind}/")
                and _matches(obj["metadata"].get("labels") or {}, selector)
                and _matches({"metadata.name": obj["metadata"]["name"]}, fields)
            ]
            list_kind = {"pods": "PodList", "configmaps": "ConfigMapList"}.get(
                kind, "PersistentVolumeClaimList"
            )
            self._answer(
                200,
                {
                    "kind": list_kind,
                    "apiVersion": "v1",
                    "metadata": {"resourceVersion": "1"},
                    "items": items,
                },
            )
            return
        self._status(404, "NotFound", f"the recorder does not serve {path}")

    def _hold_watch(self) -> None:
        """A watch that never sends an event, held open until the recorder stops: a
        WebSocket (what fabric8's client asks for) whose handshake is answered and on
        which nothing is ever sent, or else an HTTP stream that never sends a line."""
        key = self.headers.get("Sec-WebSocket-Key")
        if key and self.headers.get("Upgrade", "").lower() == "websocket":
            accept = base64.b64encode(hashlib.sha1((key + _WEBSOCKET_GUID).encode()).digest())
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", accept.decode())
        else:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        self.server.state.stopping.wait()
        self.close_connection = True

    def do_POST(self) -> None:
        path, _, body = self._record()
        state = self.server.state
        kind = path.rsplit("/", 1)[-1]
        if not isinstance(body, dict) or kind not in (
            "pods",
            "configmaps",
            "persistentvolumeclaims",
        ):
            self._status(404, "NotFound", f"the recorder does not serve POST {path}")
            return
        created = json.loads(json.dumps(body))
        metadata = created.setdefault("metadata", {})
        metadata.setdefault("namespace", state.namespace)
        metadata["uid"] = str(uuid.uuid4())
        metadata["resourceVersion"] = "2"
        metadata["creationTimestamp"] = "2026-01-01T00:00:00Z"
        if kind == "pods":
            created["status"] = {"phase": "Pending"}
        with state.lock:
            state.created[f"{kind}/{metadata.get('name')}"] = created
        self._answer(201, created)

    def do_DELETE(self) -> None:
        self._record()
        self._status(200, "", "deleted")

    def do_PATCH(self) -> None:
        path, _, _ = self._record()
        self._status(404, "NotFound", f"the recorder does not serve PATCH {path}")

    def do_PUT(self) -> None:
        path, _, _ = self._record()
        self._status(404, "NotFound", f"the recorder does not serve PUT {path}")

    def _driver_pod(self) -> dict[str, Any]:
        state = self.server.state
        return {
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {
                "name": state.driver_pod,
                "namespace": state.namespace,
                "uid": state.driver_uid,
                "resourceVersion": "1",
            },
            "spec": {"containers": [{"name": "master", "image": "weir:test"}]},
            "status": {
                "phase": "Running",
                "podIP": "127.0.0.1",
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State


class KubernetesApiRequestRecorder:
    """Records the Kubernetes API requests made to ``https://127.0.0.1:<port>``; a context
    manager. ``requests`` are in the order they arrived."""

    def __init__(self, cert_file: str, key_file: str, namespace: str, driver_pod: str) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = _State(namespace=namespace, driver_pod=driver_pod)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    @property
    def driver_uid(self) -> str:
        return self._server.state.driver_uid

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._server.state.lock:
            return list(self._server.state.requests)

    def wait_for(self, predicate: Any, timeout_s: float) -> list[RecordedRequest]:
        """Wait until ``predicate(requests)`` is true; returns the requests then. Raises
        TimeoutError with what was recorded when it never is."""
        state = self._server.state
        with state.lock:
            if not state.lock.wait_for(lambda: predicate(state.requests), timeout_s):
                seen = [f"{r.method} {r.path}" for r in state.requests]
                msg = f"not recorded within {timeout_s} s; recorded: {seen}"
                raise TimeoutError(msg)
            return list(state.requests)

    def __enter__(self) -> KubernetesApiRequestRecorder:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.state.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
