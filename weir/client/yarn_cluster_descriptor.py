"""Deploying a YARN session, as Flink's YarnClusterDescriptor: ``spark-submit --master yarn
--deploy-mode cluster`` with ``weir.client.yarn_entrypoint`` as the application's main and
the session's configuration shipped beside it, then the wait until its Dispatcher answers.

What goes where:

- ``weir-conf.yaml``: the client's configuration with the session's ``-D`` properties, as a
  YARN local resource of the ApplicationMaster (``--files``); TaskManagers get theirs from
  the master with each lease.
- ``spark.*`` keys of that configuration also go to ``spark-submit`` (the ApplicationMaster's
  container is sized and started from them); the master adds Weir's YARN defaults (dynamic
  allocation: containers on demand) when it creates its SparkContext.
- Python: Weir installed on every node at the path of the client's interpreter (or where
  ``spark.pyspark.python`` / ``PYSPARK_PYTHON`` say), or the client's environment packed and
  shipped (``yarn.ship-environment``) and run as ``./environment/bin/python``.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from weir.client.dispatcher_client import DispatcherGateway
from weir.client.yarn_client import (
    ApplicationReport,
    YarnError,
    YarnRestClient,
    hadoop_conf_dir,
)
from weir.core import config as cfg
from weir.core.errors import ConfigurationError, RemoteError, WeirError
from weir.core.security import SecurityConfig

logger = logging.getLogger(__name__)

READY_PREFIX = "Weir master ready: Dispatcher at "
REST_PREFIX = "Weir master REST API at "
SHIPPED_ENVIRONMENT = "environment"
# spark-submit uploads the configuration, the entry point and PySpark's zips (and with
# yarn.ship-environment the packed environment) and returns once YARN accepted them.
_SUBMIT_TIMEOUT_S = 600.0
# From submission to a Dispatcher that answers: YARN schedules the ApplicationMaster's
# container, which starts a JVM, the Python master and a SparkContext. Under a minute on
# an idle cluster; a busy queue can hold an application ACCEPTED much longer.
DEFAULT_START_TIMEOUT_S = 600.0
_POLL_S = 0.5
_APPLICATION_ID = re.compile(r"application_\d+_\d+")


@dataclass(frozen=True, slots=True)
class YarnSession:
    """A running session: its application and where its Dispatcher answers."""

    application_id: str
    dispatcher_address: str
    rest_url: str = ""


def spark_home() -> Path:
    import pyspark  # noqa: PLC0415 (only the submission needs it)

    return Path(pyspark.__file__).parent.resolve()


def yarn_entrypoint_path() -> Path:
    """The file Spark runs as the session's main (found, not imported: it imports the
    whole master)."""
    spec = importlib.util.find_spec("weir.client.yarn_entrypoint")
    if spec is None or spec.origin is None:
        msg = "weir.client.yarn_entrypoint is not installed with this Weir"
        raise ConfigurationError(msg)
    return Path(spec.origin)


def cluster_id_of(application_id: str) -> str:
    """A session's ``high-availability.cluster-id`` unless one is set: its application id,
    as Flink's, so that sessions never share their jobs in ZooKeeper by accident."""
    return f"/{application_id}"


class YarnClusterDescriptor:
    """Submits sessions to the YARN cluster of the Hadoop configuration in the environment
    (``HADOOP_CONF_DIR``/``YARN_CONF_DIR``) and waits for them."""

    def __init__(
        self,
        config: Mapping[str, str],
        environment: Mapping[str, str] | None = None,
        yarn: YarnRestClient | None = None,
    ) -> None:
        self.config = dict(config)
        self.environment = dict(os.environ if environment is None else environment)
        self.conf_dir = hadoop_conf_dir(self.environment)
        self.yarn = yarn or YarnRestClient.from_environment(self.environment)

    # --- submission ------------------------------------------------------------------------
    def session_configuration(self, shipped: bool) -> dict[str, str]:
        """What the master gets as its weir-conf.yaml; raises ConfigurationError."""
        entries = dict(self.config)
        entries[cfg.SPARK_MASTER.key] = "yarn"
        entries.setdefault("spark.app.name", cfg.get(entries, cfg.YARN_APPLICATION_NAME))
        entries["spark.pyspark.python"] = self._python(shipped)
        # Spark's own authentication: YARN hands the application's secret to its
        # containers, so the master, the executors and nobody else share it.
        entries.setdefault("spark.authenticate", "true")
        validated = cfg.validate(entries)
        cfg.check_relations(validated)
        return validated

    def _python(self, shipped: bool) -> str:
        if shipped:
            return f"./{SHIPPED_ENVIRONMENT}/bin/python"
        return (
            self.config.get("spark.pyspark.python")
            or self.environment.get("PYSPARK_PYTHON")
            or sys.executable
        )

    def submit_command(
        self, session_conf: Path, settings: Mapping[str, str], archive: Path | None
    ) -> list[str]:
        """The ``spark-submit`` command line of a session (its ``settings``: the
        session's configuration)."""
        attempts = cfg.get(settings, cfg.YARN_APPLICATION_ATTEMPTS) or (
            2 if cfg.get(settings, cfg.HA_TYPE) == "zookeeper" else 1
        )
        command = [
            str(spark_home() / "bin" / "spark-submit"),
            "--master",
            "yarn",
            "--deploy-mode",
            "cluster",
            "--name",
            cfg.get(settings, cfg.YARN_APPLICATION_NAME),
            "--files",
            str(session_conf),
        ]
        queue = cfg.get(settings, cfg.YARN_APPLICATION_QUEUE)
        if queue:
            command += ["--queue", queue]
        if archive is not None:
            command += ["--archives", f"{archive}#{SHIPPED_ENVIRONMENT}"]
        spark = {k: v for k, v in settings.items() if k.startswith("spark.")}
        spark.pop("spark.master", None)
        spark["spark.yarn.submit.waitAppCompletion"] = "false"
        spark["spark.yarn.maxAppAttempts"] = str(attempts)
        for key, value in sorted(spark.items()):
            command += ["--conf", f"{key}={value}"]
        command.append(str(yarn_entrypoint_path()))
        return command

    def deploy_session_cluster(
        self,
        archive: Path | None = None,
        *,
        on_submitted: Callable[[str], None] = lambda _: None,
        timeout_s: float = DEFAULT_START_TIMEOUT_S,
    ) -> YarnSession:
        """Submit a session and wait until its Dispatcher answers. ``archive``: the packed
        environment to ship. ``on_submitted`` gets the application id as soon as YARN has
        it (the client writes its properties file then)."""
        settings = self.session_configuration(shipped=archive is not None)
        with tempfile.TemporaryDirectory(prefix="weir-yarn-session-") as staging:
            session_conf = Path(staging) / "weir-conf.yaml"
            session_conf.write_text(yaml.safe_dump(dict(sorted(settings.items()))))
            command = self.submit_command(session_conf, settings, archive)
            application_id = self._submit(command)
        on_submitted(application_id)
        return self.wait_for_session(application_id, timeout_s)

    def _submit(self, command: list[str]) -> str:
        env = {**self.environment, "SPARK_HOME": str(spark_home())}
        logger.info("submitting: %s", " ".join(command))
        result = subprocess.run(
            command,
            env=env,
            capture_output=True,
            text=True,
            timeout=_SUBMIT_TIMEOUT_S,
            check=False,
        )
        output = result.stdout + result.stderr
        found = _APPLICATION_ID.search(_submitted_line(output))
        if result.returncode != 0 or found is None:
            tail = "\n".join(output.strip().splitlines()[-25:])
            msg = (
                f"spark-submit could not start the YARN session (exit code "
                f"{result.returncode}); its last lines:\n{tail}"
            )
            raise WeirError(msg)
        return found.group(0)

    # --- finding the Dispatcher ------------------------------------------------------------
    def wait_for_session(self, application_id: str, timeout_s: float) -> YarnSession:
        """Wait until the session's master printed its ready line and its Dispatcher
        answers; raises WeirError when the application ends first or time runs out."""
        deadline = time.monotonic() + timeout_s
        security = SecurityConfig.from_config(self.config)
        report: ApplicationReport | None = None
        while time.monotonic() < deadline:
            report = self.yarn.application(application_id)
            if report.ended:
                msg = (
                    f"YARN session {application_id} ended {report.state} "
                    f"({report.final_status}) before its master was ready: "
                    f"{report.diagnostics.strip()[:2000] or 'no diagnostics'}; the "
                    "ApplicationMaster's logs say why (yarn logs -applicationId "
                    f"{application_id})"
                )
                raise WeirError(msg)
            session = self.published_session(application_id)
            if session is not None and _answers(session.dispatcher_address, security):
                return session
            time.sleep(_POLL_S)  # polling interval: YARN and the master decide
        state = report.state if report is not None else "unknown"
        msg = (
            f"YARN session {application_id} has no Dispatcher answering after "
            f"{timeout_s:.0f} s (application {state}); a full queue keeps it ACCEPTED. Stop "
            f"it with `weir yarn-session -id {application_id} --stop` or `yarn application "
            f"-kill {application_id}`"
        )
        raise WeirError(msg)

    def published_session(self, application_id: str) -> YarnSession | None:
        """Where the master of the application's current attempt said its Dispatcher is
        (its ready line on the ApplicationMaster container's stdout), if it did yet."""
        container = self.yarn.application_master(application_id)
        if container is None:
            return None
        try:
            stdout = self.yarn.container_log(container, "stdout")
        except YarnError:
            return None
        address = _last_value(stdout, READY_PREFIX)
        if not address:
            return None
        return YarnSession(application_id, address, _last_value(stdout, REST_PREFIX))


def _submitted_line(output: str) -> str:
    """The line in which spark-submit names the application YARN accepted."""
    for line in output.splitlines():
        if "Submitted application" in line or "Application report for" in line:
            return line
    return ""


def _last_value(text: str, prefix: str) -> str:
    values = [line[len(prefix) :].strip() for line in text.splitlines() if line.startswith(prefix)]
    return values[-1] if values else ""


def _answers(address: str, security: SecurityConfig) -> bool:
    try:
        with DispatcherGateway(address, security=security) as gateway:
            gateway.list_jobs(include_terminated=False)
    except (RemoteError, ConfigurationError, OSError):
        return False
    return True
