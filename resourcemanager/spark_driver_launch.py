"""Starting the Spark driver's JVM without Spark's launcher.

PySpark starts its driver through ``bin/spark-submit``: shell scripts, then a first JVM
(``org.apache.spark.launcher.Main``) whose only work is to print the command line of the
second, the driver. That first JVM costs half a second or more of every start. Its
answer depends only on the Java runtime, the Spark installation and a few driver keys, so
``make setup`` asks it once (``record_launch_command``) and keeps the answer beside the
class-data sharing archive; later starts run the driver's command directly and connect
PySpark to it as PySpark does to a driver someone else started (``PYSPARK_GATEWAY_PORT``).

Whatever the recorded command cannot reproduce falls back to PySpark's own start: driver
keys the launcher turns into JVM flags other than memory and Java options, environment
variables it reads (Hadoop/YARN configuration directories, extra class paths, submit
options), a configuration directory in the Spark installation, or no recording at all.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

_MAIN_CLASS = "org.apache.spark.deploy.SparkSubmit"
_PROBE = "-Dweir.launch.probe=1"
_DEFAULT_MEMORY = "1g"
# Keys the launcher turns into the JVM's command line that the recording does not cover.
_LAUNCHER_KEYS = (
    "spark.driver.extraClassPath",
    "spark.driver.extraLibraryPath",
    "spark.driver.defaultJavaOptions",
)
# Environment the launcher or spark-class reads into the command.
_LAUNCHER_ENVIRONMENT = (
    "PYSPARK_SUBMIT_ARGS",
    "PYSPARK_GATEWAY_PORT",
    "SPARK_CONF_DIR",
    "SPARK_SUBMIT_OPTS",
    "SPARK_DIST_CLASSPATH",
    "SPARK_CLASSPATH",
    "HADOOP_CONF_DIR",
    "YARN_CONF_DIR",
    "SPARK_PREPEND_CLASSES",
    "_SPARK_CMD_USAGE",
)


def _spark_home() -> Path:
    import pyspark  # noqa: PLC0415 (only the driver needs it)

    return Path(pyspark.__file__).parent.resolve()


def record_path(archive: Path) -> Path:
    return archive.with_suffix(".launch.json")


def record_launch_command(archive: Path) -> Path:
    """Ask Spark's launcher for the driver's command once and write what does not depend
    on the configuration (the Java binary, class path and fixed JVM options) beside
    ``archive``."""
    home = _spark_home()
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_ENVIRONMENT}
    env["SPARK_HOME"] = str(home)
    probe = [
        "bash",
        str(home / "bin" / "spark-class"),
        "org.apache.spark.launcher.Main",
        _MAIN_CLASS,
        "--conf",
        f"spark.driver.extraJavaOptions={_PROBE}",
        "pyspark-shell",
    ]
    result = subprocess.run(probe, env=env, capture_output=True, check=True, timeout=120)
    command = [part.decode().lstrip("\n") for part in result.stdout.split(b"\0") if part.strip()]
    start = next(i for i, part in enumerate(command) if part.endswith("java"))
    end = command.index(_MAIN_CLASS)
    java, flag, class_path, *options = command[start:end]
    if flag != "-cp":
        msg = f"Spark's launcher printed an unexpected command: {command}"
        raise OSError(msg)
    options = [o for o in options if o != _PROBE and not o.startswith("-Xmx")]
    target = record_path(archive)
    target.write_text(
        json.dumps({"java": java, "class_path": class_path, "options": options}, indent=1)
    )
    return target


def _recorded_command(archive: Path | None, settings: Mapping[str, str]) -> list[str] | None:
    if archive is None or any(key in settings for key in _LAUNCHER_KEYS):
        return None
    if settings.get("spark.submit.deployMode", "client") != "client":
        return None
    if any(name in os.environ for name in _LAUNCHER_ENVIRONMENT):
        return None
    home = _spark_home()
    if "SPARK_HOME" in os.environ and Path(os.environ["SPARK_HOME"]).resolve() != home:
        return None
    if (home / "conf").exists():
        return None
    try:
        recorded = json.loads(record_path(archive).read_text())
    except (OSError, ValueError):
        return None
    memory = settings.get("spark.driver.memory", _DEFAULT_MEMORY)
    user_options = shlex.split(settings.get("spark.driver.extraJavaOptions", ""))
    confs = [arg for key, value in settings.items() for arg in ("--conf", f"{key}={value}")]
    return [
        recorded["java"],
        "-cp",
        recorded["class_path"],
        f"-Xmx{memory}",
        *user_options,
        *recorded["options"],
        _MAIN_CLASS,
        *confs,
        "pyspark-shell",
    ]


@contextlib.contextmanager
def _environment(**values: str) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _ignore_stop_signals() -> None:
    """The driver's JVM ignores SIGINT and SIGTERM (a JVM keeps a stop signal ignored
    that it inherits so): the master stops Spark when it stops, in order, and a signal to
    the master's whole process group (Ctrl-C, systemd, ``kill -- -pgid``) must not take
    the JVM from under it first. The JVM still ends with the master: its standard input
    closes then."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def start_driver_gateway(archive: Path | None, settings: Mapping[str, str]) -> Any | None:
    """Start the driver's JVM from the recorded command and return PySpark's gateway to
    it, or None when the recording does not apply (the caller then lets PySpark start
    the driver). Raises PySpark's JAVA_GATEWAY_EXITED error when the JVM exits before
    it listens, as PySpark's own start does."""
    from pyspark.core.context import SparkContext  # noqa: PLC0415
    from pyspark.errors import PySparkRuntimeError  # noqa: PLC0415
    from pyspark.java_gateway import launch_gateway  # noqa: PLC0415
    from pyspark.serializers import UTF8Deserializer, read_int  # noqa: PLC0415

    if SparkContext._gateway is not None:  # a JVM of this process already runs
        return None
    command = _recorded_command(archive, settings)
    if command is None:
        return None
    with tempfile.TemporaryDirectory(prefix="weir-driver-") as tmp:
        info_path = os.path.join(tmp, "connection")
        env = {
            **os.environ,
            "SPARK_HOME": str(_spark_home()),
            "SPARK_CONNECT_MODE": "0",
            "_PYSPARK_DRIVER_CONN_INFO_PATH": info_path,
        }
        # The JVM ends when its standard input closes, that is with this process; it
        # ignores Ctrl-C (as PySpark starts it) and SIGTERM, which are this process's to
        # handle.
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            env=env,
            preexec_fn=_ignore_stop_signals,  # noqa: PLW1509 (only signal.signal before exec)
        )
        while proc.poll() is None and not os.path.isfile(info_path):
            time.sleep(0.02)
        if not os.path.isfile(info_path):
            raise PySparkRuntimeError(errorClass="JAVA_GATEWAY_EXITED", messageParameters={})
        with open(info_path, "rb") as info:
            port = read_int(info)
            secret = UTF8Deserializer().loads(info)
    with _environment(PYSPARK_GATEWAY_PORT=str(port), PYSPARK_GATEWAY_SECRET=secret):
        gateway = launch_gateway()
    gateway.proc = proc
    logger.debug("Spark driver started from the recorded launch command (pid %d)", proc.pid)
    return gateway
