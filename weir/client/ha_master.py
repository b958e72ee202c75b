"""A master process under ZooKeeper or Kubernetes high availability: it waits as a standby
until it wins the election, then starts its services (the SparkContext first), recovers
the jobs of the previous leader, and serves until it stops or loses its leadership; a
master that lost it (its ZooKeeper session expired, or its Kubernetes lease went unrenewed
past the renew deadline) stops its services without writing anything and contends again.

A standby warms its Spark driver before it waits: on a local master it creates the
SparkContext it will lease from and starts its Python workers' daemon; on a cluster
manager it keeps only the driver's JVM running, with no application, and registers one on
winning (the README's High availability section says why, and what each costs).
Lines on stdout, for the scripts::

    Weir master standby: waiting for leadership (ZooKeeper 127.0.0.1:2181)
    Weir master standby: waiting for leadership (Kubernetes ConfigMap ns/orders-cluster-config-map)
    Weir master ready: Dispatcher at 127.0.0.1:6123
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from weir.client.cluster_components import (
    ClusterComponents,
    prestart_spark_driver,
    stop_spark_context,
)
from weir.core import config as cfg
from weir.core.errors import WeirError
from weir.core.highavailability.factory import (
    LeaderElectedHaServices,
    create_ha_services,
    election_store,
)

if TYPE_CHECKING:
    from pyspark import SparkContext

logger = logging.getLogger(__name__)

STANDBY_LINE = "Weir master standby: waiting for leadership ({store})"
# How often the standby's wait looks at the stop request; the election itself wakes it.
_WAIT_SLICE_S = 0.5
# A master that wins at once (the first one started) skips the warm start: its services
# start the JVM anyway. A round trip or two to ZooKeeper or the Kubernetes API server
# decides an uncontested election.
_FIRST_LEADER_WAIT_S = 1.0


def run_highly_available(
    config: Mapping[str, str],
    stop: threading.Event,
    ready_line: str,
    identifier: str,
    after_start: Callable[[], None] = lambda: None,
    *,
    lead_once: bool = False,
) -> int:
    """Contend, lead, step down, contend again, until ``stop`` is set. Returns the exit
    code: 0 after a requested stop, 1 when the services could not start. ``after_start``
    runs once the services are up (the master reinstalls its signal handlers over
    Spark's). ``lead_once``: a lost leadership ends the process with 1 instead of a new
    contention (a YARN ApplicationMaster: YARN starts another attempt)."""
    try:
        services = create_ha_services(config, identifier=identifier)
    except WeirError as exc:
        logger.error("the master could not reach its high-availability store: %s", exc)
        return 1
    warm: SparkContext | None = None
    try:
        services.start_contending()
        leads_at_once = services.latch.await_leadership(_FIRST_LEADER_WAIT_S) is not None
        while not stop.is_set():
            if not leads_at_once:
                # A standby's warm start (prestart_spark_driver says what is warmed on
                # which Spark master); winning then costs about a second of Spark start
                # instead of the JVM's, and on a local master no Python worker start
                # either. The first time, no gRPC server exists in this process yet, as
                # the JVM's launch requires; after a leadership, the JVM runs already.
                warm = prestart_spark_driver(config)
            leads_at_once = False
            print(STANDBY_LINE.format(store=election_store(config)), flush=True)
            logger.info("standby (%s): waiting for leadership", identifier)
            token = None
            while token is None and not stop.is_set():
                token = services.latch.await_leadership(_WAIT_SLICE_S)
            if token is None:
                break
            spark, warm = warm, None
            if not _lead(config, services, stop, ready_line, after_start, spark=spark):
                return 1
            if lead_once and not stop.is_set():
                logger.error("leadership lost: this master ends; a new attempt contends again")
                return 1
        return 0
    finally:
        if warm is not None:
            stop_spark_context(warm)
        services.close()


def _lead(
    config: Mapping[str, str],
    services: LeaderElectedHaServices,
    stop: threading.Event,
    ready_line: str,
    after_start: Callable[[], None],
    *,
    spark: SparkContext | None,
) -> bool:
    """Serve as the leader until leadership or the process ends. ``spark``: the standby's
    warm SparkContext, if any; the services lease from it and it is stopped with them."""
    components = ClusterComponents(
        config, spark_context=spark, ha_services=services, on_shutdown=stop.set
    )
    try:
        address = components.start(dispatcher_port=cfg.get(config, cfg.JOBMANAGER_PORT))
    except WeirError as exc:
        logger.error("the master could not start its services: %s", exc)
        _close(components, spark)
        return False
    after_start()
    print(ready_line.format(address=address), flush=True)
    if components.rest is not None:
        from weir.client.master_process import REST_LINE  # noqa: PLC0415 (it imports this module)

        print(REST_LINE.format(url=components.rest.url), flush=True)
    while not stop.is_set():
        if services.latch.await_revocation(_WAIT_SLICE_S):
            logger.warning("leadership lost: stopping this master's services; nothing is written")
            break
    else:
        # A requested stop hands the jobs over: leadership goes first (the JobMasters
        # suspend and keep their checkpoints), then the services stop.
        logger.info("stopping: handing leadership and the running jobs to a standby")
        services.latch.stop()
    _close(components, spark)
    return True


def _close(components: ClusterComponents, spark: SparkContext | None) -> None:
    """Stop the services, then the warm context they were given (a given context is
    never stopped by them): the next leadership starts from a new application."""
    try:
        components.close()
    finally:
        if spark is not None:
            stop_spark_context(spark)
