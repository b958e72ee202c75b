"""Follows one ConfigMap through the API server's watch (Flink's shared ConfigMap watcher):
its listeners hear every change, on the watcher's thread, and ``None`` while it does not
exist. A watch that breaks (the API server restarted, the connection dropped, its events
expired) is followed by a fresh read and a new watch, every retry period until the API
server answers again; nothing is missed, as each new watch starts from the version read.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from weir.core.highavailability.kubernetes.api_client import (
    ConfigMap,
    ConfigMapWatch,
    KubernetesApiClient,
    KubernetesApiError,
    KubernetesConflictError,
)

logger = logging.getLogger(__name__)

ConfigMapListener = Callable[[ConfigMap | None], None]


class ConfigMapWatcher:
    def __init__(
        self, client: KubernetesApiClient, namespace: str, name: str, retry_period_s: float
    ) -> None:
        self._client = client
        self._namespace = namespace
        self._name = name
        self._retry_period_s = retry_period_s
        self._lock = threading.Lock()
        self._listeners: list[ConfigMapListener] = []
        self._latest: ConfigMap | None = None
        self._known = False
        """Whether ``_latest`` has been read at least once."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watch: ConfigMapWatch | None = None

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, daemon=True, name=f"weir-watch-{self._name}"
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop following: the open watch is closed and the thread ends."""
        self._stop.set()
        with self._lock:
            watch = self._watch
        if watch is not None:
            watch.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)

    def add_listener(self, listener: ConfigMapListener) -> None:
        """``listener`` hears the ConfigMap as known now (if read already), then every
        change."""
        with self._lock:
            self._listeners.append(listener)
            known, latest = self._known, self._latest
        if known:
            listener(latest)

    def remove_listener(self, listener: ConfigMapListener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def _publish(self, config_map: ConfigMap | None) -> None:
        with self._lock:
            if self._known and _same(self._latest, config_map):
                return
            self._latest, self._known = config_map, True
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(config_map)
            except Exception:
                logger.exception("a ConfigMap listener failed")

    def _run(self) -> None:
        failing = False
        while not self._stop.is_set():
            try:
                items, version = self._client.list_config_maps(
                    self._namespace, field_selector=f"metadata.name={self._name}"
                )
                self._publish(items[0] if items else None)
                if failing:
                    logger.info("watching ConfigMap %s again", self._name)
                    failing = False
                while not self._stop.is_set():
                    watch = self._client.watch_config_map(self._namespace, self._name, version)
                    with self._lock:
                        self._watch = watch
                    if self._stop.is_set():
                        watch.close()
                    for _kind, config_map in watch:
                        self._publish(config_map)
                        if config_map is not None:
                            version = config_map.resource_version
            except KubernetesConflictError:
                continue  # the watch's version is too old (410 Gone): read it again
            except KubernetesApiError as exc:
                if not failing:
                    logger.warning(
                        "watching ConfigMap %s failed (%s); reading it again every %.1f s",
                        self._name,
                        exc,
                        self._retry_period_s,
                    )
                    failing = True
                self._stop.wait(self._retry_period_s)


def _same(a: ConfigMap | None, b: ConfigMap | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.resource_version == b.resource_version
