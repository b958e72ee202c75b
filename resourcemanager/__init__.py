"""The ResourceManager service: TaskManager registry, heartbeats, slots, Spark leases.

Import from its modules (``weir.resourcemanager.resource_manager`` and the others): the
package itself imports nothing, so that starting the Spark driver
(``weir.resourcemanager.spark_launcher``) does not wait for the service's gRPC stack."""
