"""Weir's configuration keys by topic; ``weir.core.config`` gives every one by name. The
keys are listed (``OPTIONS``, the docs table) in the order of the imports below."""

# isort: off
from weir.core.options import job
from weir.core.options import taskmanager
from weir.core.options import master
from weir.core.options import security
from weir.core.options import rest
from weir.core.options import high_availability
from weir.core.options import kubernetes
from weir.core.options import checkpointing
from weir.core.options import restart
from weir.core.options import yarn
from weir.core.options import s3

# isort: on

__all__ = [
    "checkpointing",
    "high_availability",
    "job",
    "kubernetes",
    "master",
    "rest",
    "restart",
    "s3",
    "security",
    "taskmanager",
    "yarn",
]
