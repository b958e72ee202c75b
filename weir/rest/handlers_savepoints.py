"""Savepoint REST handlers: ``POST /jobs/{jobid}/savepoints`` and ``POST
/jobs/{jobid}/stop`` answer at once with a trigger id (Flink's asynchronous operations);
``GET /jobs/{jobid}/savepoints/{triggerid}`` tells where the savepoint is. Their bodies'
fields are read strictly (``weir.rest.request_fields``): a request that is refused leaves
the job untouched.

They go through a ``SavepointTrigger`` (``weir.rest.savepoint_trigger``).
"""

from __future__ import annotations

from typing import Any

from weir.core.ids import parse_job_id
from weir.rest.cluster_view import ClusterView
from weir.rest.request_fields import boolean_field, json_object, string_field
from weir.rest.routes import RestRequest, RestResponse, route


@route(
    "POST",
    "/jobs/{jobid}/savepoints",
    "Trigger a savepoint ({target-directory, cancel-job}); answers with its request id.",
    status=202,
    request_body="json",
)
def post_savepoint(view: ClusterView, req: RestRequest) -> Any:
    job_id = parse_job_id(req.path_params["jobid"])
    body = json_object(req, "SavepointTriggerRequestBody")
    target_directory = string_field(body, "target-directory")
    cancel_job = boolean_field(body, "cancel-job") is True
    trigger_id = view.savepoints.trigger(job_id, target_directory, cancel_job=cancel_job)
    return RestResponse({"request-id": trigger_id}, status=202)


@route(
    "POST",
    "/jobs/{jobid}/stop",
    "Stop the job with a savepoint ({targetDirectory, drain}); answers with its request id.",
    status=202,
    request_body="json",
)
def post_stop(view: ClusterView, req: RestRequest) -> Any:
    job_id = parse_job_id(req.path_params["jobid"])
    body = json_object(req, "StopWithSavepointRequestBody")
    target_directory = string_field(body, "targetDirectory")
    drain = boolean_field(body, "drain") is True
    trigger_id = view.savepoints.trigger(job_id, target_directory, stop=True, drain=drain)
    return RestResponse({"request-id": trigger_id}, status=202)


@route(
    "GET",
    "/jobs/{jobid}/savepoints/{triggerid}",
    "Where a triggered savepoint is: IN_PROGRESS or COMPLETED with its location or failure.",
    response="SavepointStatus",
)
def get_savepoint(view: ClusterView, req: RestRequest) -> Any:
    job_id = parse_job_id(req.path_params["jobid"])
    operation = view.savepoints.status(job_id, req.path_params["triggerid"])
    if operation.status != "COMPLETED":
        return {"status": {"id": "IN_PROGRESS"}}
    result: dict[str, Any] = (
        {"failure-cause": {"class": "SavepointError", "stack-trace": operation.failure}}
        if operation.failure
        else {"location": operation.location}
    )
    return {"status": {"id": "COMPLETED"}, "operation": result}
