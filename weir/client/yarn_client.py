"""What the YARN session client asks of YARN, through its REST APIs: an application's
report, its ApplicationMaster's container and that container's ``stdout`` (served by its
NodeManager while it runs), and a kill. The ResourceManager is found in the Hadoop
configuration (``yarn-site.xml`` in ``HADOOP_CONF_DIR`` or ``YARN_CONF_DIR``), as Hadoop's
own clients find it.

The REST APIs take simple authentication only here: a cluster with Kerberos (SPNEGO on its
web endpoints) is not supported by this client.
"""

from __future__ import annotations

import getpass
import json
import logging
import os
import re
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from weir.core.errors import ConfigurationError, WeirError

logger = logging.getLogger(__name__)

# A REST call answers in milliseconds; a ResourceManager that does not answer in this
# long is down or unreachable, and the caller says so.
_HTTP_TIMEOUT_S = 15.0
_VARIABLE = re.compile(r"\$\{([^}]+)\}")


class YarnError(WeirError):
    """YARN refused a call or could not be reached."""


@dataclass(frozen=True, slots=True)
class ApplicationReport:
    """The ResourceManager's report of an application (its REST ``app`` object)."""

    application_id: str
    name: str
    queue: str
    state: str
    final_status: str
    diagnostics: str
    tracking_url: str

    @property
    def ended(self) -> bool:
        return self.state in ("FINISHED", "FAILED", "KILLED")


@dataclass(frozen=True, slots=True)
class ContainerLocation:
    """A container and the HTTP address of the NodeManager that runs it."""

    container_id: str
    node_http_address: str


def hadoop_conf_dir(environment: Mapping[str, str]) -> Path:
    """Where the cluster's ``yarn-site.xml`` is: ``HADOOP_CONF_DIR``, else ``YARN_CONF_DIR``."""
    for name in ("HADOOP_CONF_DIR", "YARN_CONF_DIR"):
        if environment.get(name):
            return Path(environment[name])
    msg = (
        "no Hadoop configuration: set HADOOP_CONF_DIR (or YARN_CONF_DIR) to the directory "
        "holding the cluster's yarn-site.xml and core-site.xml"
    )
    raise ConfigurationError(msg)


def read_hadoop_configuration(conf_dir: Path, *names: str) -> dict[str, str]:
    """The properties of Hadoop configuration files (later files win), ``${var}`` expanded."""
    properties: dict[str, str] = {}
    for name in names:
        path = conf_dir / name
        if not path.is_file():
            continue
        try:
            root = ET.parse(path).getroot()  # noqa: S314 (the user's own configuration)
        except ET.ParseError as exc:
            msg = f"{path} is not a Hadoop configuration file: {exc}"
            raise ConfigurationError(msg) from exc
        for prop in root.iter("property"):
            key, value = prop.findtext("name"), prop.findtext("value")
            if key is not None:
                properties[key.strip()] = (value or "").strip()
    return {key: _expand(value, properties) for key, value in properties.items()}


def _expand(value: str, properties: Mapping[str, str], depth: int = 0) -> str:
    if depth > 20 or "${" not in value:
        return value
    expanded = _VARIABLE.sub(lambda m: properties.get(m.group(1), m.group(0)), value)
    return _expand(expanded, properties, depth + 1) if expanded != value else value


class YarnRestClient:
    """Calls to a ResourceManager's and its NodeManagers' REST APIs."""

    def __init__(self, resource_manager_webapp: str, user: str | None = None) -> None:
        address = resource_manager_webapp
        self.base = address if "://" in address else f"http://{address}"
        self.user = user or os.environ.get("HADOOP_USER_NAME") or getpass.getuser()

    @classmethod
    def from_environment(cls, environment: Mapping[str, str] | None = None) -> YarnRestClient:
        """The ResourceManager of the Hadoop configuration in ``HADOOP_CONF_DIR``."""
        environment = os.environ if environment is None else environment
        conf_dir = hadoop_conf_dir(environment)
        site = read_hadoop_configuration(conf_dir, "yarn-site.xml")
        address = site.get("yarn.resourcemanager.webapp.address") or (
            f"{site['yarn.resourcemanager.hostname']}:8088"
            if site.get("yarn.resourcemanager.hostname")
            else ""
        )
        if not address:
            msg = (
                f"{conf_dir / 'yarn-site.xml'} names no ResourceManager: set "
                "yarn.resourcemanager.webapp.address (or yarn.resourcemanager.hostname) there"
            )
            raise ConfigurationError(msg)
        return cls(address, environment.get("HADOOP_USER_NAME"))

    # --- the ResourceManager ------------------------------------------------------------
    def application(self, application_id: str) -> ApplicationReport:
        app = self._request("GET", f"{self.base}/ws/v1/cluster/apps/{application_id}")["app"]
        return ApplicationReport(
            application_id=str(app["id"]),
            name=str(app.get("name", "")),
            queue=str(app.get("queue", "")),
            state=str(app["state"]),
            final_status=str(app.get("finalStatus", "")),
            diagnostics=str(app.get("diagnostics", "")),
            tracking_url=str(app.get("trackingUrl", "")),
        )

    def application_master(self, application_id: str) -> ContainerLocation | None:
        """The container of the application's latest attempt, once it has one."""
        url = f"{self.base}/ws/v1/cluster/apps/{application_id}/appattempts"
        attempts = self._request("GET", url).get("appAttempts") or {}
        latest = max(attempts.get("appAttempt", []), key=lambda a: a["id"], default=None)
        if latest is None or not latest.get("containerId") or not latest.get("nodeHttpAddress"):
            return None
        return ContainerLocation(str(latest["containerId"]), str(latest["nodeHttpAddress"]))

    def kill(self, application_id: str) -> None:
        """YARN's own kill (``yarn application -kill``): the application ends KILLED."""
        url = f"{self.base}/ws/v1/cluster/apps/{application_id}/state"
        self._request("PUT", url, {"state": "KILLED"})

    # --- a NodeManager --------------------------------------------------------------------
    def container_log(self, container: ContainerLocation, file_name: str) -> str:
        """A running container's log file (``stdout``, ``stderr``) from its NodeManager;
        empty when it has none (yet)."""
        node = container.node_http_address
        base = node if "://" in node else f"http://{node}"
        url = f"{base}/ws/v1/node/containers/{container.container_id}/logs/{file_name}"
        try:
            return self._fetch("GET", url, accept="text/plain").decode("utf-8", "replace")
        except YarnError as exc:
            if "404" in str(exc):
                return ""
            raise

    # --- plumbing ----------------------------------------------------------------------------
    def _request(self, method: str, url: str, body: Any = None) -> Any:
        data = self._fetch(method, url, body)
        try:
            return json.loads(data) if data else {}
        except ValueError as exc:
            msg = f"YARN answered {method} {url} with no JSON: {data[:200]!r}"
            raise YarnError(msg) from exc

    def _fetch(
        self, method: str, url: str, body: Any = None, accept: str = "application/json"
    ) -> bytes:
        if not url.startswith(("http://", "https://")):
            msg = f"not a YARN web address: {url!r}"
            raise ConfigurationError(msg)
        query = urllib.parse.urlencode({"user.name": self.user})
        request = urllib.request.Request(  # noqa: S310 (http or https, checked above)
            f"{url}{'&' if '?' in url else '?'}{query}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Accept": accept, "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=_HTTP_TIMEOUT_S) as reply:  # noqa: S310
                return bytes(reply.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:500].decode("utf-8", "replace")
            msg = f"YARN refused {method} {url}: {exc.code} {detail}"
            raise YarnError(msg) from exc
        except (urllib.error.URLError, OSError) as exc:
            msg = f"YARN at {url} could not be reached ({exc}); is the ResourceManager up?"
            raise YarnError(msg) from exc
