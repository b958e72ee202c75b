"""The YARN session client without a cluster: Flink's flags as configuration keys, the
properties file, the spark-submit command of a session, the master's configuration in its
container, and the Hadoop configuration it finds YARN in."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pytest

from weir.client import yarn_session
from weir.client.yarn_client import YarnRestClient, read_hadoop_configuration
from weir.client.yarn_cluster_descriptor import (
    YarnClusterDescriptor,
    session_log_file,
    spark_submit_error,
    yarn_entrypoint_path,
)
from weir.client.yarn_entrypoint import application_id_of, master_config
from weir.client.yarn_properties import (
    YarnSessionProperties,
    read_properties,
    remove_properties,
    write_properties,
)
from weir.core.errors import ConfigurationError


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    yarn_session.add_arguments(parser)
    return parser.parse_args(argv)


def test_flinks_flags_become_configuration_keys() -> None:
    ns = _parse(
        "-nm", "etl", "-qu", "streaming", "-jm", "1024", "-tm", "2g", "-s", "2",
        "-D", "state.backend.type=rocksdb", "-Dspark.executor.memoryOverhead=512m", "-d",
    )  # fmt: skip
    assert yarn_session.dynamic_properties(ns) == {
        "yarn.application.name": "etl",
        "yarn.application.queue": "streaming",
        "spark.driver.memory": "1024m",
        "spark.executor.memory": "2048m",
        "taskmanager.numberOfTaskSlots": "2",
        "state.backend.type": "rocksdb",
        "spark.executor.memoryOverhead": "512m",
    }
    assert ns.detached


def test_a_bad_flag_value_says_what_to_give() -> None:
    with pytest.raises(ConfigurationError, match="1024m, 1g"):
        yarn_session.dynamic_properties(_parse("-tm", "lots"))
    with pytest.raises(ConfigurationError, match="key=value"):
        yarn_session.dynamic_properties(_parse("-D", "no-value"))


def test_stop_is_a_word_or_a_flag() -> None:
    assert _parse("-id", "application_1_2", "stop").action == "stop"
    assert _parse("-id", "application_1_2", "--stop").stop


def test_the_properties_file_round_trips_and_is_removed_only_for_its_session(
    tmp_path: Path,
) -> None:
    config = {"yarn.properties-file.location": str(tmp_path)}
    session = YarnSessionProperties(
        "application_1_7",
        "node7:40123",
        {"high-availability.cluster-id": "/application_1_7", "a.b": "x=y@z"},
    )
    path = write_properties(config, session)
    assert path.parent == tmp_path and path.name.startswith(".yarn-properties-")
    assert read_properties(config) == session
    assert not remove_properties(config, "application_1_8")
    assert remove_properties(config, "application_1_7")
    assert read_properties(config) is None


def test_the_master_binds_its_containers_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("socket.gethostbyname", lambda host: {"node7": "10.1.2.7"}[host])
    config = master_config(
        {"yarn.application-master.port": "40100", "rest.port": "8081"},
        {"NM_HOST": "node7", "CONTAINER_ID": "container_e17_1700_0007_02_000001"},
    )
    assert config["jobmanager.bind-host"] == "10.1.2.7"
    assert config["jobmanager.rpc.address"] == "node7"
    assert config["jobmanager.rpc.port"] == "40100"
    assert config["rest.port"] == "0"
    assert config["spark.master"] == "yarn"
    assert "high-availability.cluster-id" not in config


def test_with_high_availability_a_session_keeps_its_jobs_under_its_application_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("socket.gethostbyname", lambda host: "10.1.2.7")
    environment = {"NM_HOST": "node7", "CONTAINER_ID": "container_1700_0007_02_000001"}
    config = master_config({"high-availability.type": "zookeeper"}, environment)
    assert config["high-availability.cluster-id"] == "/application_1700_0007"
    given = {"high-availability.type": "zookeeper", "high-availability.cluster-id": "/mine"}
    assert master_config(given, environment)["high-availability.cluster-id"] == "/mine"


def test_application_ids_are_read_from_container_ids() -> None:
    assert application_id_of("container_e17_1410901177871_0001_01_000005") == (
        "application_1410901177871_0001"
    )
    with pytest.raises(ConfigurationError, match="no YARN container id"):
        application_id_of("")


def _hadoop_conf(tmp_path: Path, properties: dict[str, str]) -> Path:
    body = "".join(
        f"<property><name>{k}</name><value>{v}</value></property>" for k, v in properties.items()
    )
    (tmp_path / "yarn-site.xml").write_text(f"<configuration>{body}</configuration>")
    return tmp_path


def test_the_resource_manager_is_found_in_yarn_site(tmp_path: Path) -> None:
    conf = _hadoop_conf(tmp_path, {"yarn.resourcemanager.hostname": "rm.example"})
    assert YarnRestClient.from_environment({"HADOOP_CONF_DIR": str(conf)}).base == (
        "http://rm.example:8088"
    )
    expanded = read_hadoop_configuration(
        _hadoop_conf(tmp_path, {"h": "rm2", "yarn.resourcemanager.webapp.address": "${h}:18088"}),
        "yarn-site.xml",
    )
    assert expanded["yarn.resourcemanager.webapp.address"] == "rm2:18088"
    with pytest.raises(ConfigurationError, match="HADOOP_CONF_DIR"):
        YarnRestClient.from_environment({})


def test_a_session_is_one_spark_submit_in_cluster_mode(tmp_path: Path) -> None:
    conf = _hadoop_conf(tmp_path, {"yarn.resourcemanager.webapp.address": "rm:8088"})
    environment = {"HADOOP_CONF_DIR": str(conf), "PYSPARK_PYTHON": "/opt/weir/bin/python"}
    config = {
        "yarn.application.queue": "streaming",
        "spark.executor.memory": "1g",
        "high-availability.type": "zookeeper",
    }
    descriptor = YarnClusterDescriptor(config, environment)
    settings = descriptor.session_configuration(shipped=False)
    assert settings["spark.pyspark.python"] == "/opt/weir/bin/python"
    command = descriptor.submit_command(tmp_path / "weir-conf.yaml", settings, None)
    assert command[1:5] == ["--master", "yarn", "--deploy-mode", "cluster"]
    assert ["--queue", "streaming"] == command[
        command.index("--queue") : command.index("--queue") + 2
    ]
    assert "spark.yarn.maxAppAttempts=2" in command  # high availability: a second attempt
    assert "spark.executor.memory=1g" in command
    assert "spark.authenticate=true" in command
    assert command[-1] == str(yarn_entrypoint_path())

    shipped = descriptor.session_configuration(shipped=True)
    assert shipped["spark.pyspark.python"] == "./environment/bin/python"
    command = descriptor.submit_command(tmp_path / "c.yaml", shipped, tmp_path / "env.tar.gz")
    assert f"{tmp_path / 'env.tar.gz'}#environment" in command


def test_spark_submits_failure_is_the_message_of_the_exception_it_died_of() -> None:
    output = (
        "26/11/29 01:44:19 INFO Client: Verifying our application has not requested more\n"
        'Exception in thread "main" java.lang.IllegalArgumentException: Required AM memory '
        "(20480+2048 MB) is above the max threshold (12288 MB) of this cluster!\n"
        "\tat org.apache.spark.deploy.yarn.Client.verifyClusterResources(Client.scala:423)\n"
        "Caused by: java.io.IOException: something else\n"
    )
    assert spark_submit_error(output) == (
        "Required AM memory (20480+2048 MB) is above the max threshold (12288 MB) of this cluster!"
    )
    bare = 'Exception in thread "main" java.lang.NullPointerException\n\tat x.y(Z.java:1)\n'
    assert spark_submit_error(bare) == "java.lang.NullPointerException"
    usage = "Error: Unrecognized option: --bogus\n\nUsage: spark-submit [options] <app jar>\n"
    assert spark_submit_error(usage) == "Error: Unrecognized option: --bogus"
    assert spark_submit_error("   \n") == "it printed nothing"
    assert len(spark_submit_error('Exception in thread "main" x.YError: ' + "y" * 5000)) == 1000


def test_the_session_log_is_in_weir_log_dir_else_env_log_dir_else_the_temporary_directory(
    tmp_path: Path,
) -> None:
    name = session_log_file({}, {"WEIR_LOG_DIR": str(tmp_path / "a")}).name
    assert name.startswith("weir-") and name.endswith(".log") and "-yarn-session-" in name
    config = {"env.log.dir": str(tmp_path / "b")}
    assert session_log_file(config, {"WEIR_LOG_DIR": str(tmp_path / "a")}).parent == (
        tmp_path / "a"
    )
    assert session_log_file(config, {}).parent == tmp_path / "b"
    assert session_log_file({}, {}).parent == Path(tempfile.gettempdir())
