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

spark-submit's output goes to the session log (:func:`session_log_file`), not to the
terminal: a session that is not started ends in one line with the reason (YARN's
diagnostics when YARN has the application, else the message of spark-submit's exception)
and the log's path.
"""

from __future__ import annotations

import getpass
import importlib.util
import logging
import os
import re
import shlex
import socket
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
# spark-submit's last words when it fails: the JVM's uncaught exception, whose message is
# the reason (the class name before it and the stack trace after it are not).
_MAIN_EXCEPTION = 'Exception in thread "main" '
_EXCEPTION_CLASS = re.compile(r"^[\w$.]+(?:Exception|Error)(?::\s*|$)")
# A reason longer than this is cut: it is one line on a terminal.
_MAX_REASON_CHARS = 1000


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


def session_log_file(config: Mapping[str, str], environment: Mapping[str, str]) -> Path:
    """Where a session client keeps spark-submit's output, as Flink's yarn-session.sh keeps
    its client's log (``flink-<user>-yarn-session-<host>.log``): in ``WEIR_LOG_DIR``
    (yarn-session.sh sets it, from ``env.log.dir`` or ``<weir>/log``), else ``env.log.dir``,
    else the system's temporary directory."""
    directory = (
        environment.get("WEIR_LOG_DIR")
        or cfg.get(config, cfg.CLUSTER_LOG_DIR)
        or tempfile.gettempdir()
    )
    name = f"weir-{getpass.getuser()}-yarn-session-{socket.gethostname()}.log"
    return Path(directory) / name


def one_line(text: str) -> str:
    """The first non-blank line of ``text``, its whitespace collapsed, cut to a terminal
    line's worth of reason."""
    for line in text.splitlines():
        if line.strip():
            collapsed = " ".join(line.split())
            if len(collapsed) > _MAX_REASON_CHARS:
                return collapsed[: _MAX_REASON_CHARS - 3] + "..."
            return collapsed
    return ""


def spark_submit_error(output: str) -> str:
    """Why spark-submit failed, in one line: the message of the exception it died of
    (``Exception in thread "main" java.lang.IllegalArgumentException: Required AM memory
    ...`` gives ``Required AM memory ...``), else its last line that says ``Error``, else its
    last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if line.startswith(_MAIN_EXCEPTION):
            thrown = line[len(_MAIN_EXCEPTION) :]
            message = _EXCEPTION_CLASS.sub("", thrown, count=1)
            return one_line(message or thrown)
    for line in reversed(lines):
        if line.startswith("Error") or " ERROR " in line:
            return one_line(line)
    return one_line(lines[-1]) if lines else "it printed nothing"


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
        self.log_file = session_log_file(self.config, self.environment)

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
        """Run spark-submit, its output into the session log; the application id YARN
        accepted. WeirError in one line, the reason and the log's path, when it failed."""
        env = {**self.environment, "SPARK_HOME": str(spark_home())}
        logger.info("submitting: %s", " ".join(command))
        try:
            result = subprocess.run(
                command,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=_SUBMIT_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            partial = exc.output if isinstance(exc.output, str) else ""
            kept = self._keep_output(command, partial)
            msg = (
                f"the YARN session was not started: spark-submit did not return within "
                f"{_SUBMIT_TIMEOUT_S:.0f} s ({kept})"
            )
            raise WeirError(msg) from None
        output = result.stdout
        kept = self._keep_output(command, output)
        found = _APPLICATION_ID.search(_submitted_line(output))
        if result.returncode != 0 or found is None:
            msg = f"the YARN session was not started: {self._failure_reason(output)} ({kept})"
            raise WeirError(msg)
        return found.group(0)

    def _keep_output(self, command: list[str], output: str) -> str:
        """Append spark-submit's output to the session log; says where it is (or why not)."""
        try:
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            with self.log_file.open("a", encoding="utf-8") as log:
                log.write(f"---- {time.strftime('%Y-%m-%d %H:%M:%S')} {shlex.join(command)}\n")
                log.write(output if output.endswith("\n") or not output else output + "\n")
        except OSError as exc:
            return f"spark-submit's output could not be kept in {self.log_file}: {exc.strerror}"
        return f"spark-submit's full output: {self.log_file}"

    def _failure_reason(self, output: str) -> str:
        """YARN's diagnostics of the application spark-submit names, when YARN has it (a
        refused queue); else what spark-submit died of (a container larger than the
        cluster allows is refused before the application is submitted)."""
        named = _APPLICATION_ID.findall(output)
        if named:
            try:
                report = self.yarn.application(named[-1])
            except YarnError:
                report = None  # never submitted: YARN does not know it
            if report is not None and report.diagnostics.strip():
                return f"{report.application_id} {report.state}: {one_line(report.diagnostics)}"
        return spark_submit_error(output)

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
                    f"{one_line(report.diagnostics) or 'no diagnostics'} (its logs: yarn logs "
                    f"-applicationId {application_id})"
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
