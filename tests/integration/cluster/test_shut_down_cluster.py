"""ShutDownCluster (``weir yarn-session --stop``): a master's Dispatcher hands the request
to its process, which stops as on SIGTERM; an embedded cluster refuses it, saying why, and
keeps running."""

from __future__ import annotations

import threading

import pytest

from weir.client.cluster_components import ClusterComponents
from weir.client.dispatcher_client import DispatcherGateway
from weir.core.errors import WeirError

pytestmark = pytest.mark.spark


def test_a_masters_dispatcher_asks_its_process_to_stop(spark_context) -> None:
    stop = threading.Event()
    config = {"resourcemanager.taskmanager.max": "1", "rest.port": "0"}
    with ClusterComponents(config, spark_context, on_shutdown=stop.set) as components:
        address = components.start(dispatcher_port=0)
        with DispatcherGateway(address) as gateway:
            gateway.shut_down_cluster()
        assert stop.is_set()


def test_an_embedded_cluster_refuses_and_keeps_running(mini_cluster) -> None:
    with DispatcherGateway(mini_cluster.address) as gateway:
        with pytest.raises(WeirError, match="cannot be shut down remotely"):
            gateway.shut_down_cluster()
        assert gateway.list_jobs(include_terminated=True) is not None
