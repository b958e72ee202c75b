"""How the Spark driver's JVM is started: a class-data sharing archive, quiet logging and
the address it binds.

A SparkContext takes seconds to start, most of it the JVM loading and verifying some
ten thousand classes. A dynamic class-data sharing (CDS) archive, written once by a run
that starts Spark and leases a TaskManager, lets later JVMs map those classes instead:
``make setup`` writes it (``python -m weir.resourcemanager.spark_driver_jvm``). The archive
belongs to one JVM build and one set of Spark jars, so its name carries a key of both; a
JVM that cannot use it ignores it silently. Without an archive, nothing changes but
the start-up time.

Spark logs through log4j2: a configuration of Weir's keeps the driver at WARN and drops
the start-up chatter (which profile was used, the native Hadoop library), unless
``spark.driver.extraJavaOptions`` names a configuration of the user's.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path

logger = logging.getLogger(__name__)

EXTRA_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
_LOG4J_CONFIG = "spark-log4j2.properties"


def _java_binary() -> Path | None:
    java_home = os.environ.get("JAVA_HOME")
    candidate = Path(java_home, "bin", "java") if java_home else None
    if candidate is None or not candidate.exists():
        found = shutil.which("java")
        candidate = Path(found) if found else None
    return candidate.resolve() if candidate is not None else None


def archive_path() -> Path | None:
    """Where this environment's archive is (or would be written): in the environment's
    ``share/weir``, named after the JVM build and the Spark jars it was made for. None
    when no JVM is found."""
    java = _java_binary()
    if java is None:
        return None
    import pyspark  # noqa: PLC0415 (only the driver needs it)

    jars = Path(pyspark.__file__).parent / "jars"
    stat = java.stat()
    key = f"{java}|{stat.st_size}|{stat.st_mtime_ns}|{jars.resolve()}|{pyspark.__version__}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return Path(sys.prefix) / "share" / "weir" / f"spark-driver-{digest}.jsa"


def log4j_config_path() -> Path:
    return Path(str(resources.files("weir.resourcemanager") / _LOG4J_CONFIG))


def driver_java_options(user_options: str = "") -> str:
    """The driver's ``extraJavaOptions``: Weir's (the CDS archive when there is one, the
    log4j2 configuration) followed by the user's, which win where both set something."""
    options = []
    archive = archive_path()
    if archive is not None and archive.exists():
        # -Xlog:cds*=off: an archive the JVM cannot use is skipped without a warning.
        options += [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds*=off"]
    options.append(f"-Dlog4j2.configurationFile={log4j_config_path()}")
    if user_options:
        options.append(user_options)
    return " ".join(options)


@contextlib.contextmanager
def driver_environment(bind_host: str) -> Iterator[None]:
    """While the driver JVM is launched: bind it to ``bind_host`` when that is a loopback
    address (Spark reads SPARK_LOCAL_IP from the environment it is launched with, and
    would otherwise bind the machine's external interface and warn about it). A value
    the user set is kept."""
    loopback = False
    with contextlib.suppress(ValueError):
        loopback = ipaddress.ip_address(bind_host).is_loopback
    if not loopback or "SPARK_LOCAL_IP" in os.environ:
        yield
        return
    os.environ["SPARK_LOCAL_IP"] = bind_host
    try:
        yield
    finally:
        os.environ.pop("SPARK_LOCAL_IP", None)


def write_archive(config: Mapping[str, str] | None = None) -> Path | None:
    """Start a local Spark driver that leases one task, and write the classes it loaded
    into this environment's archive when its JVM exits. Returns the archive's path, or
    None when no JVM is found. Runs the JVM in a child process: the archive is written
    at the JVM's exit."""
    import subprocess  # noqa: PLC0415

    target = archive_path()
    if target is None:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="weir-cds-") as tmp:
        partial = Path(tmp) / target.name
        script = _ARCHIVE_RUN.format(
            options=f"-XX:ArchiveClassesAtExit={partial} -Xlog:cds*=off "
            f"-Dlog4j2.configurationFile={log4j_config_path()}",
            master=dict(config or {}).get("spark.master", "local[1]"),
        )
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
        subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=600)
        if not partial.exists():
            msg = f"the JVM wrote no class-data sharing archive at {partial}"
            raise OSError(msg)
        os.replace(partial, target)
    return target


_ARCHIVE_RUN = """
from pyspark import SparkConf, SparkContext
conf = (SparkConf().setMaster({master!r}).setAppName("weir-cds")
        .set("spark.ui.enabled", "false").set("spark.ui.showConsoleProgress", "false")
        .set("spark.driver.extraJavaOptions", {options!r}))
context = SparkContext(conf=conf)
context.parallelize([0], 1).mapPartitions(lambda rows: rows).collect()
jvm = context._gateway.proc
context.stop()
# The JVM writes the archive as it exits, which it does when its stdin closes: wait.
jvm.stdin.close()
jvm.wait(timeout=300)
"""


def main() -> int:
    from weir.resourcemanager.spark_driver_launch import record_launch_command  # noqa: PLC0415

    path = write_archive()
    if path is None:
        print("no Java runtime found: no class-data sharing archive written", file=sys.stderr)
        return 1
    print(f"Spark driver class-data sharing archive: {path}")
    print(f"Spark driver launch command: {record_launch_command(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
