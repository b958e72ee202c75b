"""Application REST handlers (Flink 2's ``/applications``). Flink 2 runs every job in an
application; a job submitted on its own is a single-job application whose id is the
job's. Weir's jobs are all submitted on their own, so each job is one application."""

from __future__ import annotations

from typing import Any

from weir.core.job_info import JobDetailsInfo
from weir.core.job_status import JobStatus
from weir.rest.cluster_view import ClusterView
from weir.rest.handlers_jobs import exception_entries, job_overview_entry
from weir.rest.routes import RestRequest, RestResponse, route

# Flink's ApplicationState.fromJobStatus for a single-job application.
_APPLICATION_STATE = {
    JobStatus.INITIALIZING: "CREATED",
    JobStatus.CREATED: "CREATED",
    JobStatus.RUNNING: "RUNNING",
    JobStatus.RESTARTING: "RUNNING",
    JobStatus.RECONCILING: "RUNNING",
    JobStatus.SUSPENDED: "RUNNING",
    JobStatus.FAILING: "FAILING",
    JobStatus.FAILED: "FAILED",
    JobStatus.CANCELLING: "CANCELING",
    JobStatus.CANCELED: "CANCELED",
    JobStatus.FINISHED: "FINISHED",
}


def _times(job: JobDetailsInfo) -> dict[str, Any]:
    entry = job_overview_entry(job)
    return {k: entry[k] for k in ("start-time", "end-time", "duration")}


def _application(job: JobDetailsInfo) -> dict[str, Any]:
    """Flink's ApplicationDetails (an entry of the overview)."""
    return {
        "id": job.job_id,
        "name": job.job_name,
        **_times(job),
        "status": _APPLICATION_STATE[JobStatus[job.status]],
        "jobs": {job.status: 1},
    }


@route("GET", "/applications/overview", "Every application with its times and jobs.")
def get_applications_overview(view: ClusterView, req: RestRequest) -> Any:
    jobs = view.dispatcher.list_jobs(include_terminated=True)
    return {"applications": [_application(j) for j in jobs]}


@route("GET", "/applications/{applicationid}", "One application with its jobs.")
def get_application(view: ClusterView, req: RestRequest) -> Any:
    job = view.dispatcher.job_details(req.path_params["applicationid"])
    status = JobStatus[job.status]
    return {
        "id": job.job_id,
        "name": job.job_name,
        "status": _APPLICATION_STATE[status],
        **_times(job),
        "timestamps": {
            "CREATED": job.start_time_ms,
            **({_APPLICATION_STATE[status]: job.end_time_ms} if job.end_time_ms else {}),
        },
        "jobs": [job_overview_entry(job)],
    }


@route(
    "GET",
    "/applications/{applicationid}/exceptions",
    "The application's failures: those of its job.",
)
def get_application_exceptions(view: ClusterView, req: RestRequest) -> Any:
    job = view.dispatcher.job_details(req.path_params["applicationid"])
    return {
        "exceptionHistory": {
            "entries": [
                {
                    "exceptionName": e["exceptionName"],
                    "stacktrace": e["stacktrace"],
                    "timestamp": e["timestamp"],
                    "jobId": job.job_id,
                }
                for e in exception_entries(job)
            ]
        }
    }


@route(
    "POST",
    "/applications/{applicationid}/cancel",
    "Cancel the application: its job.",
    status=202,
)
def post_application_cancel(view: ClusterView, req: RestRequest) -> Any:
    view.dispatcher.cancel_job(req.path_params["applicationid"])
    return RestResponse({}, status=202)
