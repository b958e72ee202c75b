"""The master's metrics (Flink's JobManager scope ``jobmanager`` and job scope
``jobmanager.job``): per job ``numRestarts``, ``uptime``, ``lastCheckpointDuration``,
``lastCheckpointSize``, ``numberOfCompletedCheckpoints``, ``numberOfFailedCheckpoints``,
``numberOfInProgressCheckpoints``; for the cluster ``numRegisteredTaskManagers``,
``taskSlotsTotal``, ``taskSlotsAvailable``, ``numRunningJobs``.

Read from the Dispatcher over gRPC when Prometheus scrapes, so nothing is kept between
scrapes and the REST API and Prometheus see the same values.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from weir.client.dispatcher_client import DispatcherGateway
from weir.core.errors import WeirError
from weir.core.job_status import JobStatus
from weir.core.metrics import MetricSample
from weir.core.metrics.prometheus import PrometheusReporter, start_prometheus_reporter
from weir.core.security import SecurityConfig

__all__ = ["JobManagerMetrics"]

logger = logging.getLogger(__name__)


class JobManagerMetrics:
    """``start`` serves the master's Prometheus endpoint when it is configured."""

    def __init__(self, dispatcher_address: str, config: Mapping[str, str]) -> None:
        self._dispatcher_address = dispatcher_address
        self._config = dict(config)
        self._security = SecurityConfig.from_config(self._config)
        self._reporter: PrometheusReporter | None = None

    @property
    def prometheus_address(self) -> str:
        return self._reporter.address if self._reporter is not None else ""

    def start(self, host: str) -> None:
        """Start the Prometheus endpoint if it is configured, on ``host`` (the master's
        bind address) unless ``metrics.reporter.prom.host`` or security say otherwise."""
        self._reporter = start_prometheus_reporter(
            self._config, self._security, host, self.snapshot
        )

    def snapshot(self) -> list[MetricSample]:
        host = self._dispatcher_address.rsplit(":", 1)[0]
        samples: list[MetricSample] = []
        try:
            with DispatcherGateway(self._dispatcher_address, security=self._security) as dispatcher:
                overview = dispatcher.overview()
                own = {"host": host}
                for name, value in (
                    ("numRegisteredTaskManagers", overview.task_managers),
                    ("taskSlotsTotal", overview.slots_total),
                    ("taskSlotsAvailable", overview.slots_available),
                    ("numRunningJobs", overview.jobs_running),
                ):
                    samples.append(MetricSample(("jobmanager",), name, own, "gauge", value))
                for job in dispatcher.list_jobs(include_terminated=False):
                    samples.extend(self._job_samples(dispatcher, host, job.job_id))
        except WeirError:
            # A scrape while the master stops: answer with what was read.
            logger.warning("reading the master's metrics failed", exc_info=True)
        return samples

    @staticmethod
    def _job_samples(dispatcher: DispatcherGateway, host: str, job_id: str) -> list[MetricSample]:
        details = dispatcher.job_details(job_id)
        stats = dispatcher.checkpoint_statistics(job_id)
        variables = {"host": host, "job_id": job_id, "job_name": details.job_name}
        running = JobStatus[details.status] is JobStatus.RUNNING
        uptime = int(time.time() * 1000) - details.start_time_ms if running else 0
        restarts = max((t.attempt_number for t in details.tasks), default=0)
        latest = stats.latest_completed
        values = {
            "numRestarts": restarts,
            "uptime": uptime,
            "lastCheckpointDuration": latest.end_to_end_duration_ms if latest else -1,
            "lastCheckpointSize": latest.state_size_bytes if latest else -1,
            "numberOfCompletedCheckpoints": stats.num_completed,
            "numberOfFailedCheckpoints": stats.num_failed,
            "numberOfInProgressCheckpoints": stats.num_in_progress,
        }
        return [
            MetricSample(("jobmanager", "job"), name, variables, "gauge", float(value))
            for name, value in values.items()
        ]

    def close(self) -> None:
        if self._reporter is not None:
            self._reporter.close()
            self._reporter = None
