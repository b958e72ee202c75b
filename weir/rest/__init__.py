"""Flink's REST API and the web dashboard, served by the master: ``RestServerEndpoint``.
It reads the cluster only through gRPC (the Dispatcher, the TaskExecutors' metrics)."""

from weir.rest.cluster_view import ClusterView
from weir.rest.rest_server_endpoint import RestServerEndpoint
from weir.rest.savepoint_trigger import (
    DispatcherSavepointTrigger,
    SavepointOperation,
    SavepointTrigger,
    UnsupportedSavepointTrigger,
)

__all__ = [
    "ClusterView",
    "DispatcherSavepointTrigger",
    "RestServerEndpoint",
    "SavepointOperation",
    "SavepointTrigger",
    "UnsupportedSavepointTrigger",
]
