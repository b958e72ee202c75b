"""Which starts of the Spark driver may skip Spark's launcher, and the command they run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from weir.resourcemanager import spark_driver_launch as launch


@pytest.fixture
def archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in (*launch._LAUNCHER_ENVIRONMENT, "SPARK_HOME"):
        monkeypatch.delenv(name, raising=False)
    archive = tmp_path / "spark-driver-0123.jsa"
    launch.record_path(archive).write_text(
        json.dumps({"java": "/jvm/bin/java", "class_path": "/spark/jars/*", "options": ["-Dx=1"]})
    )
    return archive


def test_the_recorded_command_carries_memory_options_and_every_setting(archive: Path) -> None:
    settings = {
        "spark.master": "local[2]",
        "spark.driver.memory": "3g",
        "spark.driver.extraJavaOptions": "-Da=1 '-Db=two words'",
    }
    command = launch._recorded_command(archive, settings)
    assert command is not None
    assert command[:6] == [
        "/jvm/bin/java",
        "-cp",
        "/spark/jars/*",
        "-Xmx3g",
        "-Da=1",
        "-Db=two words",
    ]
    assert command[6:8] == ["-Dx=1", "org.apache.spark.deploy.SparkSubmit"]
    assert command[8:] == [
        "--conf", "spark.master=local[2]",
        "--conf", "spark.driver.memory=3g",
        "--conf", "spark.driver.extraJavaOptions=-Da=1 '-Db=two words'",
        "pyspark-shell",
    ]  # fmt: skip


def test_the_default_driver_memory_is_sparks(archive: Path) -> None:
    command = launch._recorded_command(archive, {"spark.master": "local[1]"})
    assert command is not None and "-Xmx1g" in command


@pytest.mark.parametrize(
    "key",
    [
        "spark.driver.extraClassPath",
        "spark.driver.extraLibraryPath",
        "spark.driver.defaultJavaOptions",
    ],
)
def test_keys_only_the_launcher_understands_fall_back_to_it(archive: Path, key: str) -> None:
    assert launch._recorded_command(archive, {key: "x"}) is None


def test_cluster_deploy_mode_falls_back(archive: Path) -> None:
    assert launch._recorded_command(archive, {"spark.submit.deployMode": "cluster"}) is None


@pytest.mark.parametrize("name", ["HADOOP_CONF_DIR", "SPARK_CONF_DIR", "PYSPARK_SUBMIT_ARGS"])
def test_environment_the_launcher_reads_falls_back(
    archive: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(name, "/somewhere")
    assert launch._recorded_command(archive, {}) is None


def test_another_spark_installation_falls_back(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    assert launch._recorded_command(archive, {}) is None


def test_no_recording_or_a_broken_one_falls_back(archive: Path) -> None:
    assert launch._recorded_command(None, {}) is None
    launch.record_path(archive).write_text("{not json")
    assert launch._recorded_command(archive, {}) is None
    launch.record_path(archive).unlink()
    assert launch._recorded_command(archive, {}) is None
