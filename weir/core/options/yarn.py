"""YARN session keys (Flink's YarnConfigOptions): the application, its attempts, where the
client keeps the session's properties, and how Weir reaches the NodeManagers."""

from __future__ import annotations

from weir.core.config_option import _option, _parse_bool, _port


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        msg = f"expected 0 or more, got {text!r}"
        raise ValueError(msg)
    return value


# --- YARN session -------------------------------------------------------------------
YARN_APPLICATION_NAME = _option(
    "yarn.application.name",
    "Weir session cluster",
    str,
    "Name of the YARN application of a session (yarn-session.sh -nm).",
)
YARN_APPLICATION_QUEUE = _option(
    "yarn.application.queue",
    "",
    str,
    "YARN queue of the session's application (yarn-session.sh -qu); empty: YARN's default.",
)
YARN_APPLICATION_ATTEMPTS = _option(
    "yarn.application-attempts",
    0,
    _non_negative_int,
    "How often YARN starts the session's ApplicationMaster (the master) before the "
    "application fails; 0: 1 without high availability, 2 with it, as Flink's. A new attempt "
    "recovers the running jobs only under high availability.",
)
YARN_APPLICATION_MASTER_PORT = _option(
    "yarn.application-master.port",
    0,
    _port,
    "Port of the Dispatcher in the ApplicationMaster's container (0 = any free port: several "
    "sessions may share a node).",
)
YARN_PROPERTIES_FILE_LOCATION = _option(
    "yarn.properties-file.location",
    "",
    str,
    "Directory of the .yarn-properties-<user> file through which `weir run/list/cancel/...` "
    "find a session started there; empty: the system's temporary directory.",
)
YARN_SHIP_ENVIRONMENT = _option(
    "yarn.ship-environment",
    False,
    _parse_bool,
    "Pack the client's Python environment (Weir and its dependencies) and ship it with the "
    "session (spark.archives), for NodeManagers without Weir installed.",
)
