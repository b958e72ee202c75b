"""A highly available cluster on S3, with real processes: two masters against a real
ZooKeeper server and a real MinIO server (tests/minio_server.py), ``weir-conf.yaml``
holding the S3 endpoint and credentials, ``high-availability.storageDir`` and
``execution.checkpointing.savepoint-dir`` on ``s3://``, and the running-sum job
checkpointing to ``s3://``:

- the job graph goes to the storageDir's bucket; the leader is SIGKILLed, and the standby
  takes the job from S3 (graph and latest checkpoint);
- no credential shows: not in the REST API's configuration views (the key and the secret
  are ``******``), not in Flink's own dashboard showing the Job Manager's configuration,
  not in any log of the masters or the TaskManagers;
- ``weir stop`` writes the savepoint into the configured ``s3://`` savepoint directory, and
  ``weir run -s s3://...`` resumes from it: the output of both runs together is exactly
  the failure-free output."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_harness import wait_until
from flink_clients import DashboardProxy, extract_dashboard, install_flink
from ha_cluster import (
    JOB_S,
    MASTER_START_S,
    RUNNING_SUM,
    HaCluster,
    Master,
    committed,
    expected_running_sums,
    leader_and_standby,
)
from headless_chromium import chromium
from minio_server import ROOT_PASSWORD, ROOT_USER

from weir.core.sensitive_keys import HIDDEN_VALUE

pytestmark = [pytest.mark.spark, pytest.mark.long]

JOB_ID = re.compile(r"Job has been submitted with JobID ([0-9a-f]{32})")
SAVEPOINT = re.compile(r"Savepoint completed\. Path: (\S+)")


@pytest.fixture
def bucket(minio: Any) -> str:
    return str(minio.new_bucket("ha"))


@pytest.fixture
def s3_cluster(zookeeper: Any, minio: Any, bucket: str, tmp_path: Path) -> Iterator[HaCluster]:
    cluster = HaCluster(
        tmp_path,
        zookeeper.address,
        **minio.config(),
        **{
            "high-availability.storageDir": f"s3://{bucket}/ha",
            "execution.checkpointing.savepoint-dir": f"s3://{bucket}/savepoints",
        },
    )
    yield cluster
    cluster.stop()


def rest_url(master: Master) -> str:
    found = re.findall(r"REST endpoint and web dashboard at (\S+)", master.text())
    assert found, "this master has not served REST yet"
    return str(found[-1])


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as reply:
        return str(reply.read().decode())


def run(cluster: HaCluster, out: Path, checkpoints: str, records: int, *options: str) -> str:
    """The running-sum job, detached; its job id."""
    submitted = cluster.weir(
        "run",
        "-d",
        *options,
        str(RUNNING_SUM),
        "--output",
        str(out),
        "--checkpoints",
        checkpoints,
        "--records",
        str(records),
    )
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    found = JOB_ID.search(submitted.stdout)
    assert found, submitted.stdout
    return found.group(1)


def latest_checkpoint(fs: Any, prefix: str) -> int:
    """The id of the latest completed checkpoint under ``prefix`` (0: none)."""
    found = [re.search(r"/chk-(\d+)/_metadata$", p) for p in fs.find(prefix)]
    return max((int(m.group(1)) for m in found if m), default=0)


def test_an_ha_cluster_on_s3_fails_over_resumes_from_an_s3_savepoint_and_shows_no_credential(
    s3_cluster: HaCluster, minio: Any, bucket: str, tmp_path: Path
) -> None:
    cluster = s3_cluster
    fs = minio.file_system()
    records = 30_000  # half a minute of work or more: running through the failover
    leader, standby = leader_and_standby(cluster)
    first_out = tmp_path / "out-1"
    job_id = run(cluster, first_out, f"s3://{bucket}/chk-1", records)
    wait_until(lambda: latest_checkpoint(fs, f"{bucket}/chk-1") >= 2, JOB_S, "checkpoints")
    # The job graph is kept in the storageDir's bucket, where the standby will read it.
    assert any("submittedJobGraph" in p for p in fs.find(f"{bucket}/ha")), fs.find(bucket)

    # The credentials are hidden in every configuration view of the REST API ...
    rest = rest_url(leader)
    config = {e["key"]: e["value"] for e in json.loads(get(f"{rest}/jobmanager/config"))}
    assert config["s3.secret-key"] == HIDDEN_VALUE
    assert config["s3.access-key"] == HIDDEN_VALUE
    assert config["s3.endpoint"] == minio.endpoint
    for view in (
        "/jobmanager/config",
        "/jobmanager/environment",
        f"/jobs/{job_id}/config",
        f"/jobs/{job_id}/checkpoints/config",
    ):
        body = get(f"{rest}{view}")
        assert ROOT_PASSWORD not in body and ROOT_USER not in body, view
    # ... and in Flink's dashboard showing the Job Manager's configuration.
    web = extract_dashboard(install_flink(), tmp_path / "dashboard")
    with DashboardProxy(web, rest.removeprefix("http://")) as proxy, chromium() as driver:
        driver.get(f"{proxy.url}/#/job-manager/config")
        wait_until(lambda: "s3.secret-key" in driver.page_source, 60, "the configuration table")
        page = driver.page_source
    assert HIDDEN_VALUE in page
    assert ROOT_PASSWORD not in page and ROOT_USER not in page

    leader.kill()
    wait_until(lambda: standby.leading, MASTER_START_S, "the standby to take over")
    wait_until(lambda: "recovering from checkpoint" in standby.text(), JOB_S, "the recovery")
    assert "reached FINISHED" not in standby.text(), "the job ended before the savepoint"
    # A checkpoint after the recovery: every task runs again.
    recovered = latest_checkpoint(fs, f"{bucket}/chk-1")
    wait_until(
        lambda: latest_checkpoint(fs, f"{bucket}/chk-1") > recovered, JOB_S, "a new checkpoint"
    )

    # No -p: the savepoint goes to execution.checkpointing.savepoint-dir, on S3.
    stopped = cluster.weir("stop", job_id, timeout=JOB_S)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    found = SAVEPOINT.search(stopped.stdout)
    assert found, stopped.stdout
    savepoint = found.group(1)
    assert savepoint.startswith(f"s3://{bucket}/savepoints/savepoint-"), savepoint
    assert fs.exists(f"{savepoint.removeprefix('s3://')}/_metadata")

    second_out = tmp_path / "out-2"
    resumed = run(cluster, second_out, f"s3://{bucket}/chk-2", records, "-s", savepoint)
    wait_until(
        lambda: f"job {resumed} reached FINISHED" in standby.text(),
        JOB_S,
        "the resumed job to finish",
    )
    assert committed(first_out) + committed(second_out) == expected_running_sums(records)

    # No log of any process holds a credential.
    logs = [m.log for m in cluster.masters] + [p for p in cluster.log_dir.rglob("*") if p.is_file()]
    for log in logs:
        text = log.read_text(errors="replace")
        assert ROOT_PASSWORD not in text, log
