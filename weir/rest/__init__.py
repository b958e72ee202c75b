"""Flink's REST API and the web dashboard, served by the master:
``weir.rest.rest_server_endpoint.RestServerEndpoint``. It reads the cluster only through
gRPC (the Dispatcher, the TaskExecutors' metrics).

The package itself imports nothing: the master's metrics (``job_manager_metrics``) live
here too, and a cluster that serves no REST endpoint (the embedded one, by default) does
not import the web server."""
