"""The Spark driver started from the recorded launch command, in fresh interpreters (a
process has one driver JVM): it runs Spark jobs, and a setting the JVM refuses is
reported as a configuration error, as with Spark's own launcher."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from weir.resourcemanager.spark_driver_jvm import archive_path
from weir.resourcemanager.spark_driver_launch import record_launch_command, record_path

SCRIPT = textwrap.dedent(
    """
    import logging, sys
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("weir.resourcemanager.spark_driver_launch").setLevel(logging.DEBUG)
    from weir.core.errors import ConfigurationError
    from weir.resourcemanager.spark_launcher import create_spark_context
    settings = {"spark.master": "local[1]", "spark.driver.extraJavaOptions": sys.argv[1]}
    try:
        spark = create_spark_context(settings)
    except ConfigurationError as exc:
        print("CONFIGURATION ERROR:", exc)
        sys.exit(3)
    print("SUM", spark.parallelize(range(10), 2).sum())
    print("PROPERTY", spark._jvm.System.getProperty("weir.test"))
    """
)


@pytest.fixture(scope="module")
def recorded() -> None:
    archive = archive_path()
    assert archive is not None, "no Java runtime found"
    if not record_path(archive).exists():
        archive.parent.mkdir(parents=True, exist_ok=True)
        record_launch_command(archive)


def run(java_options: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, java_options],
        capture_output=True, text=True, env=env, timeout=180, check=False,
    )  # fmt: skip


def test_a_driver_from_the_recorded_command_runs_jobs_with_the_users_options(
    recorded: None,
) -> None:
    result = run("-Dweir.test=given")
    assert result.returncode == 0, result.stderr
    assert "started from the recorded launch command" in result.stderr
    assert "SUM 45" in result.stdout
    assert "PROPERTY given" in result.stdout


def test_an_option_the_jvm_refuses_is_a_configuration_error(recorded: None) -> None:
    result = run("-Xmxnonsense")
    assert result.returncode == 3, result.stdout + result.stderr
    assert "CONFIGURATION ERROR: the Spark driver's JVM exited while starting" in result.stdout
    assert "spark.driver.extraJavaOptions='-Xmxnonsense'" in result.stdout
