"""The ``.yarn-properties-<user>`` file, as Flink's: the client that starts (or attaches to)
a YARN session writes it, and ``weir run/list/cancel/savepoint/stop`` without ``-m`` read
it to reach that session. It lives in ``yarn.properties-file.location`` (default: the
system's temporary directory) and holds Java properties::

    applicationID=application_1700000000000_0007
    dispatcherAddress=node7.example.com:40123
    dynamicPropertiesString=high-availability.cluster-id\\=/application_...@@...

``dynamicPropertiesString`` is the session's ``-D`` properties joined by ``@@`` (Flink's
form): a client applies them over its own configuration, so that it finds a session with
high availability in ZooKeeper under the session's cluster id.
"""

from __future__ import annotations

import getpass
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from weir.core import config as cfg

APPLICATION_ID = "applicationID"
DISPATCHER_ADDRESS = "dispatcherAddress"
DYNAMIC_PROPERTIES = "dynamicPropertiesString"
_SEPARATOR = "@@"


@dataclass(frozen=True, slots=True)
class YarnSessionProperties:
    """What the properties file says of the session."""

    application_id: str
    dispatcher_address: str = ""
    dynamic_properties: dict[str, str] = field(default_factory=dict)


def properties_file(config: Mapping[str, str]) -> Path:
    directory = cfg.get(config, cfg.YARN_PROPERTIES_FILE_LOCATION) or tempfile.gettempdir()
    return Path(directory) / f".yarn-properties-{getpass.getuser()}"


def write_properties(config: Mapping[str, str], session: YarnSessionProperties) -> Path:
    """Write the file atomically (a client reading it sees the old or the new one)."""
    path = properties_file(config)
    dynamic = _SEPARATOR.join(f"{k}={v}" for k, v in sorted(session.dynamic_properties.items()))
    lines = [
        "# The YARN session weir run/list/cancel/... reach without -m (weir yarn-session)",
        f"{APPLICATION_ID}={_escape(session.application_id)}",
        f"{DISPATCHER_ADDRESS}={_escape(session.dispatcher_address)}",
        f"{DYNAMIC_PROPERTIES}={_escape(dynamic)}",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temp.write_text("\n".join(lines) + "\n")
    temp.replace(path)
    return path


def read_properties(config: Mapping[str, str]) -> YarnSessionProperties | None:
    """The session the file names, or None when there is no file (no session started)."""
    path = properties_file(config)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    values: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "!")) or "=" not in stripped:
            continue
        key, _, value = _split(stripped)
        values[key] = _unescape(value)
    if not values.get(APPLICATION_ID):
        return None
    dynamic = {}
    for pair in filter(None, values.get(DYNAMIC_PROPERTIES, "").split(_SEPARATOR)):
        key, _, value = pair.partition("=")
        dynamic[key.strip()] = value.strip()
    return YarnSessionProperties(
        values[APPLICATION_ID], values.get(DISPATCHER_ADDRESS, ""), dynamic
    )


def remove_properties(config: Mapping[str, str], application_id: str) -> bool:
    """Remove the file if it names ``application_id``; True if it did."""
    found = read_properties(config)
    if found is None or found.application_id != application_id:
        return False
    properties_file(config).unlink(missing_ok=True)
    return True


def _split(line: str) -> tuple[str, str, str]:
    """Split a properties line at its first unescaped ``=``."""
    index = 0
    while index < len(line):
        if line[index] == "\\":
            index += 2
            continue
        if line[index] == "=":
            return line[:index].strip(), "=", line[index + 1 :].strip()
        index += 1
    return line, "", ""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("=", "\\=").replace(":", "\\:")


def _unescape(value: str) -> str:
    out, index = [], 0
    while index < len(value):
        if value[index] == "\\" and index + 1 < len(value):
            out.append(value[index + 1])
            index += 2
        else:
            out.append(value[index])
            index += 1
    return "".join(out)
