"""Metric groups with Flink's scopes, the metric kinds PyFlink hands out, rates read
from a clock, the names reporters give them, and where the Prometheus reporter binds."""

from __future__ import annotations

import pytest

from weir.core.errors import ConfigurationError
from weir.core.metrics import MetricRegistry, RateView, ScopedMetricGroup
from weir.core.metrics.metric_types import DistributionImpl, MeterView, SimpleCounter
from weir.core.metrics.prometheus import (
    PROMETHEUS_FACTORY_CLASSES,
    PrometheusReporterConfig,
    _ports,
    prometheus_name,
)
from weir.core.security import Endpoint, SecurityConfig, TlsMaterial
from weir.metrics import Counter, Distribution, Meter, MetricGroup


def _operator_group(registry: MetricRegistry) -> ScopedMetricGroup:
    task = ScopedMetricGroup(registry, ("taskmanager",), {"tm_id": "tm"}).child(
        "job", {"job_id": "j"}
    )
    return task.child("task", {"subtask_index": "0"}).child("operator", {"operator_name": "Map"})


class TestScopedMetricGroup:
    def test_hands_out_pyflink_metric_kinds(self):
        group = _operator_group(MetricRegistry())
        assert isinstance(group, MetricGroup)
        assert isinstance(group.counter("c"), Counter)
        assert isinstance(group.meter("m"), Meter)
        assert isinstance(group.distribution("d"), Distribution)

    def test_snapshot_carries_scope_variables_and_values(self):
        registry = MetricRegistry()
        group = _operator_group(registry).add_group("mygroup")
        counter = group.counter("seen")
        counter.inc(5)
        counter.dec()
        group.gauge("last", lambda: 42)
        (seen,) = [s for s in registry.snapshot() if s.name == "seen"]
        assert seen.value == 4
        assert seen.scope == ("taskmanager", "job", "task", "operator", "mygroup")
        assert seen.variables == {
            "tm_id": "tm",
            "job_id": "j",
            "subtask_index": "0",
            "operator_name": "Map",
        }
        assert [s.value for s in registry.snapshot() if s.name == "last"] == [42]

    def test_key_value_group_adds_a_variable(self):
        registry = MetricRegistry()
        group = _operator_group(registry).add_group("region", "eu")
        group.counter("orders").inc()
        (sample,) = registry.snapshot()
        assert sample.scope[-1] == "region"
        assert sample.variables["region"] == "eu"

    def test_a_variable_set_later_reaches_the_groups_made_after(self):
        registry = MetricRegistry()
        root = ScopedMetricGroup(registry, ("taskmanager",), {"host": "", "tm_id": "tm"})
        root.set_variable("host", "10.0.0.7")
        root.child("job", {"job_id": "j"}).counter("c")
        (sample,) = registry.snapshot()
        assert sample.variables == {"host": "10.0.0.7", "tm_id": "tm", "job_id": "j"}

    def test_closing_a_group_unregisters_its_sub_groups(self):
        registry = MetricRegistry()
        task = _operator_group(registry)
        task.add_group("a").counter("x")
        task.counter("y")
        assert len(registry) == 2
        task.close()
        assert len(registry) == 0

    def test_a_failing_user_gauge_does_not_break_a_snapshot(self):
        registry = MetricRegistry()
        group = _operator_group(registry)
        group.gauge("broken", lambda: 1 / 0)
        group.counter("fine").inc()
        assert [s.name for s in registry.snapshot()] == ["fine"]

    def test_refuses_names_a_reporter_cannot_carry(self):
        group = _operator_group(MetricRegistry())
        with pytest.raises(ValueError, match="rename it"):
            group.counter("has space")


class _CountingLock:
    """A lock that counts how often it was taken."""

    def __init__(self) -> None:
        self.taken = 0

    def __enter__(self) -> None:
        self.taken += 1

    def __exit__(self, *_: object) -> None:
        pass


class TestMetricRegistry:
    def test_a_read_takes_no_lock(self):
        registry = MetricRegistry()
        group = _operator_group(registry)
        group.counter("seen").inc(3)
        lock = registry._lock = _CountingLock()
        assert [s.value for s in registry.snapshot() if s.name == "seen"] == [3]
        assert len(registry) == 1
        assert lock.taken == 0

    def test_a_read_sees_the_table_as_it_was_when_it_started(self):
        registry = MetricRegistry()
        group = _operator_group(registry)
        group.gauge("first", lambda: 1)

        def register_while_read() -> int:
            group.register_metrics({"second": SimpleCounter(), "third": SimpleCounter()})
            return 2

        group.gauge("reader", register_while_read)
        assert sorted(s.name for s in registry.snapshot()) == ["first", "reader"]
        assert sorted(s.name for s in registry.snapshot()) == ["first", "reader", "second", "third"]


class TestMetricKinds:
    def test_distribution(self):
        d = DistributionImpl()
        for v in (5, 1, 9):
            d.update(v)
        assert (d.count, d.sum, d.min, d.max, d.mean) == (3, 15, 1, 9, 5.0)

    def test_counter_and_meter_counts(self):
        c = SimpleCounter()
        c.inc(3)
        m = MeterView()
        m.mark_event(2)
        assert c.get_count() == 3 and m.get_count() == 2

    def test_rate_over_its_span(self):
        now = [0.0]
        total = [0.0]
        view = RateView(lambda: total[0], time_span_s=10, clock=lambda: now[0])
        assert view.get_rate() == 0.0
        for _ in range(30):  # 100 a second for 30 s
            now[0] += 1
            total[0] += 100
            view.get_rate()
        assert view.get_rate() == pytest.approx(100)
        for _ in range(10):  # then nothing: the 10 s window forgets the old rate
            now[0] += 1
            view.get_rate()
        assert view.get_rate() == pytest.approx(0)


class TestPrometheusNames:
    def test_flink_names(self):
        assert (
            prometheus_name(("taskmanager", "job", "task"), "numRecordsIn")
            == "flink_taskmanager_job_task_numRecordsIn"
        )
        assert prometheus_name(("taskmanager",), "Status.Python.CPU.Load") == (
            "flink_taskmanager_Status_Python_CPU_Load"
        )

    def test_port_specs(self):
        assert _ports("9249") == [9249]
        assert _ports("9250-9252, 9260") == [9250, 9251, 9252, 9260]
        with pytest.raises(ConfigurationError, match="metrics.reporter.prom.port"):
            _ports("high")


def _pem_material(endpoint: Endpoint) -> TlsMaterial:
    """Read material, as SecurityConfig.from_config keeps it; never used for a handshake here."""
    return TlsMaterial(endpoint, "c.pem", "k.pem", "ca.pem", b"cert", b"key", b"ca")


FLINK_REPORTER = {"metrics.reporter.prom.factory.class": PROMETHEUS_FACTORY_CLASSES[0]}


class TestPrometheusReporterConfig:
    """Where a process's Prometheus endpoint binds and whether it is HTTPS, by security."""

    def test_none_without_a_reporter_and_an_error_naming_an_unknown_one(self):
        assert PrometheusReporterConfig.from_config({}, SecurityConfig(), "10.0.0.5") is None
        unknown = {"metrics.reporter.prom.factory.class": "org.example.Graphite"}
        with pytest.raises(ConfigurationError, match="org.example.Graphite"):
            PrometheusReporterConfig.from_config(unknown, SecurityConfig(), "10.0.0.5")

    def test_binds_the_process_host_on_a_cluster_without_security(self):
        config = PrometheusReporterConfig.from_config(FLINK_REPORTER, SecurityConfig(), "10.0.0.5")
        assert config is not None
        assert (config.host, config.port_spec, config.tls) == ("10.0.0.5", "9249", False)

    @pytest.mark.parametrize(
        "security",
        [
            SecurityConfig(token="t"),
            SecurityConfig(internal=_pem_material(Endpoint.INTERNAL)),
            SecurityConfig(rest=_pem_material(Endpoint.REST)),
        ],
        ids=["token", "internal-tls", "rest-tls"],
    )
    def test_binds_loopback_on_a_secured_cluster_unless_told_otherwise(self, security):
        config = PrometheusReporterConfig.from_config(FLINK_REPORTER, security, "10.0.0.5")
        assert config is not None and (config.host, config.tls) == ("127.0.0.1", False)
        chosen = {**FLINK_REPORTER, "metrics.reporter.prom.host": "10.0.0.9"}
        config = PrometheusReporterConfig.from_config(chosen, security, "10.0.0.5")
        assert config is not None and config.host == "10.0.0.9"

    def test_https_binds_the_process_host_with_the_rest_certificate(self):
        security = SecurityConfig(rest=_pem_material(Endpoint.REST), token="t")
        https = {**FLINK_REPORTER, "metrics.reporter.prom.ssl.enabled": "true"}
        config = PrometheusReporterConfig.from_config(https, security, "10.0.0.5")
        assert config is not None
        assert (config.host, config.tls, config.security) == ("10.0.0.5", True, security)

    def test_https_without_the_rest_certificate_names_the_key_to_set(self):
        https = {**FLINK_REPORTER, "metrics.reporter.prom.ssl.enabled": "true"}
        internal_only = SecurityConfig(internal=_pem_material(Endpoint.INTERNAL))
        with pytest.raises(ConfigurationError, match=r"security\.ssl\.rest\.enabled"):
            PrometheusReporterConfig.from_config(https, internal_only, "10.0.0.5")
