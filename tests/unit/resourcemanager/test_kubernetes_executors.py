"""The Spark settings a master builds for ``k8s://`` masters: every value from Weir's keys
(weir-conf.yaml, or the chart's values rendered into it), and the user's spark.* keys win."""

from __future__ import annotations

import logging

import pytest

from weir.core.errors import ConfigurationError
from weir.core.kubernetes_cluster import BLOCK_MANAGER_PORT, DRIVER_PORT
from weir.resourcemanager.kubernetes_executors import kubernetes_spark_settings
from weir.resourcemanager.spark_launcher import driver_settings

MASTER = {"spark.master": "k8s://https://kubernetes.default.svc"}
POD = {"spark.kubernetes.driver.pod.name": "orders-7d9f-abcde"}


def test_a_local_or_standalone_master_gets_no_kubernetes_settings() -> None:
    assert kubernetes_spark_settings({"spark.master": "local[2]"}) == {}
    assert kubernetes_spark_settings({"spark.master": "spark://h:7077"}) == {}
    assert not any(k.startswith("spark.kubernetes.") for k in driver_settings({}))


def test_namespace_image_and_pull_settings_come_from_the_kubernetes_keys() -> None:
    settings = kubernetes_spark_settings(
        {
            **MASTER,
            **POD,
            "kubernetes.namespace": "streaming",
            "kubernetes.container.image.ref": "registry.example/weir:0.1.0",
            "kubernetes.container.image.pull-policy": "always",
            "kubernetes.container.image.pull-secrets": "regcred; other",
        }
    )
    assert settings["spark.kubernetes.namespace"] == "streaming"
    assert settings["spark.kubernetes.container.image"] == "registry.example/weir:0.1.0"
    assert settings["spark.kubernetes.container.image.pullPolicy"] == "Always"
    assert settings["spark.kubernetes.container.image.pullSecrets"] == "regcred,other"


def test_the_image_may_be_given_under_flinks_old_key() -> None:
    settings = kubernetes_spark_settings({**MASTER, "kubernetes.container.image": "old:1"})
    assert settings["spark.kubernetes.container.image"] == "old:1"


def test_defaults_are_the_default_namespace_and_weirs_image() -> None:
    settings = kubernetes_spark_settings({**MASTER, **POD})
    assert settings["spark.kubernetes.namespace"] == "default"
    assert settings["spark.kubernetes.container.image"] == "weir:0.1.0"
    assert settings["spark.kubernetes.container.image.pullPolicy"] == "IfNotPresent"
    assert "spark.kubernetes.container.image.pullSecrets" not in settings
    assert "spark.kubernetes.executor.podTemplateFile" not in settings


def test_the_cluster_id_names_the_pods_and_labels_them_as_taskmanagers() -> None:
    settings = kubernetes_spark_settings({**MASTER, **POD, "kubernetes.cluster-id": "orders"})
    assert settings["spark.kubernetes.executor.podNamePrefix"] == "orders"
    assert settings["spark.kubernetes.executor.label.app"] == "orders"
    assert settings["spark.kubernetes.executor.label.component"] == "taskmanager"
    assert settings["spark.kubernetes.executor.label.type"] == "weir-native-kubernetes"


def test_the_pod_template_is_sparks_executor_template() -> None:
    settings = kubernetes_spark_settings(
        {**MASTER, **POD, "kubernetes.pod-template-file.taskmanager": "/opt/weir/conf/tm.yaml"}
    )
    assert settings["spark.kubernetes.executor.podTemplateFile"] == "/opt/weir/conf/tm.yaml"


def test_a_pod_requests_one_cpu_per_slot_unless_told_and_its_process_size() -> None:
    settings = kubernetes_spark_settings(
        {
            **MASTER,
            **POD,
            "taskmanager.numberOfTaskSlots": "2",
            "taskmanager.memory.process.size": "3 gb",
        }
    )
    assert settings["spark.executor.cores"] == "1"  # one lease, one TaskManager per pod
    assert settings["spark.kubernetes.executor.request.cores"] == "2"
    assert settings["spark.kubernetes.executor.limit.cores"] == "2"
    # Spark's pod memory is heap + overhead: the whole process size.
    assert settings["spark.executor.memory"] == "512m"
    assert settings["spark.executor.memoryOverhead"] == f"{3 * 1024 - 512}m"

    halves = kubernetes_spark_settings(
        {**MASTER, **POD, "kubernetes.taskmanager.cpu.amount": "0.5"}
    )
    assert halves["spark.kubernetes.executor.request.cores"] == "0.5"


def test_a_process_size_below_a_jvm_and_python_is_refused_by_name() -> None:
    with pytest.raises(ConfigurationError, match=r"taskmanager\.memory\.process\.size"):
        kubernetes_spark_settings({**MASTER, "taskmanager.memory.process.size": "256 mb"})


def test_a_bad_cluster_id_is_refused_with_the_rule() -> None:
    from weir.core import config as cfg

    for bad in ("Orders", "orders-", "9orders", "o" * 46):
        with pytest.raises(ConfigurationError, match="kubernetes.cluster-id"):
            cfg.validate({"kubernetes.cluster-id": bad})


def test_executor_instances_are_the_taskmanagers_the_master_keeps() -> None:
    settings = kubernetes_spark_settings({**MASTER, **POD, "resourcemanager.taskmanager.min": "3"})
    assert settings["spark.executor.instances"] == "3"
    settings = kubernetes_spark_settings({**MASTER, **POD, "resourcemanager.taskmanager.max": "4"})
    assert settings["spark.executor.instances"] == "4"


def test_the_driver_listens_on_fixed_ports_and_advertises_the_masters_address() -> None:
    settings = driver_settings(
        {
            **MASTER,
            **POD,
            "jobmanager.bind-host": "0.0.0.0",
            "jobmanager.rpc.address": "orders-driver.streaming.svc",
        }
    )
    assert settings["spark.driver.port"] == str(DRIVER_PORT)
    assert settings["spark.driver.blockManager.port"] == str(BLOCK_MANAGER_PORT)
    assert settings["spark.blockManager.port"] == str(BLOCK_MANAGER_PORT)
    assert settings["spark.driver.bindAddress"] == "0.0.0.0"
    assert settings["spark.driver.host"] == "orders-driver.streaming.svc"
    # The master starts without waiting for executor pods: leases wait for them.
    assert settings["spark.scheduler.minRegisteredResourcesRatio"] == "0"
    # Spark generates the secret and hands it to each executor pod.
    assert settings["spark.authenticate"] == "true"
    assert settings["spark.kubernetes.driver.pod.name"] == POD["spark.kubernetes.driver.pod.name"]


def test_spark_keys_of_the_configuration_win() -> None:
    settings = driver_settings(
        {
            **MASTER,
            **POD,
            "kubernetes.namespace": "streaming",
            "spark.kubernetes.namespace": "elsewhere",
            "spark.executor.memory": "1g",
            "spark.driver.port": "7000",
        }
    )
    assert settings["spark.kubernetes.namespace"] == "elsewhere"
    assert settings["spark.executor.memory"] == "1g"
    assert settings["spark.driver.port"] == "7000"


def test_a_master_without_its_pod_name_warns_that_taskmanager_pods_have_no_owner(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        kubernetes_spark_settings(MASTER)
    assert "spark.kubernetes.driver.pod.name is not set" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        kubernetes_spark_settings({**MASTER, **POD})
    assert caplog.text == ""


def test_executors_are_told_the_drivers_advertised_address_not_its_bind_address() -> None:
    # A master in a pod binds 0.0.0.0 and is reached through its driver Service.
    settings = driver_settings(
        {
            **MASTER,
            **POD,
            "jobmanager.bind-host": "0.0.0.0",
            "jobmanager.rpc.address": "orders-driver.streaming.svc",
        }
    )
    assert settings["spark.driver.bindAddress"] == "0.0.0.0"
    assert settings["spark.driver.host"] == "orders-driver.streaming.svc"
    # Spark >= 4.1 would hand executors the bind address unless told not to.
    assert settings["spark.kubernetes.executor.useDriverPodIP"] == "false"


def test_flinks_taskmanager_pod_keys_become_sparks_executor_settings() -> None:
    settings = kubernetes_spark_settings(
        {
            **MASTER,
            **POD,
            "kubernetes.cluster-id": "orders",
            "kubernetes.taskmanager.labels": "team:payments,component:ignored",
            "kubernetes.taskmanager.annotations": "example.com/owner:payments",
            "kubernetes.taskmanager.node-selector": "disk:ssd",
            "kubernetes.taskmanager.cpu.amount": "0.5",
            "kubernetes.taskmanager.cpu.limit-factor": "2",
        }
    )
    assert settings["spark.kubernetes.executor.label.team"] == "payments"
    # The cluster's own labels win over the user's.
    assert settings["spark.kubernetes.executor.label.component"] == "taskmanager"
    assert settings["spark.kubernetes.executor.annotation.example.com/owner"] == "payments"
    assert settings["spark.kubernetes.executor.node.selector.disk"] == "ssd"
    assert settings["spark.kubernetes.executor.request.cores"] == "0.5"
    assert settings["spark.kubernetes.executor.limit.cores"] == "1"
