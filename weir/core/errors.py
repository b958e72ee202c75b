"""The exception tree every Weir component raises.

WeirError
├── ConfigurationError (ValueError)        a key or value in the configuration is wrong
│   └── MissingDependencyError (ImportError)  a setting needs a package that is not installed
├── JobGraphError (ValueError)             a program cannot become a valid JobGraph
├── JobSubmissionError                     the cluster refused a job
├── JobNotFoundError (KeyError)            no job with that id
├── InvalidJobIdError (ValueError)         a job id that is not 32 hex digits
├── JobExecutionError                      a job ended FAILED or CANCELED; carries the cause
├── SlotAllocationError                    not enough slots within slot.request.timeout
├── TaskManagerLostError                   a TaskManager stopped heart-beating or died
├── TaskManagerNotFoundError (KeyError)    no registered TaskManager with that id
├── DeploymentVersionError                 a task deployment of another Weir version
├── InvalidRequestError (ValueError)       a request carried a field its server cannot decode
├── RemoteError                            a gRPC call failed (mapped from grpc.StatusCode)
│   ├── ServiceUnavailableError (ConnectionError)
│   ├── RemoteTimeoutError (TimeoutError)
│   └── AuthenticationError (PermissionError)  the peer refused our credentials
├── NetworkError (ConnectionError)         the data plane lost a connection or a partition
│   └── ProducerFailedError                 the task producing an input failed (a consequence)
├── RecordTooLargeError (ValueError)       a record does not fit in one network frame
├── RecordSerializationError (TypeError)   a record an operator emitted cannot be pickled
├── UnhashableKeyError (TypeError)         a key selector returned a key that cannot be hashed
├── DeclaredTypeError (TypeError)          a record does not fit its stream's declared type
├── UserCodeError                          user code raised inside a task; keeps the traceback
│   └── UserSystemExitError                 user code called os._exit in a task
├── NonRecoverableError                    no restart can cure it: the job fails at once,
│                                          whatever its restart strategy (subclasses beside
│                                          the code that raises them: a Kafka configuration
│                                          the brokers refuse, a class a task cannot import)
├── LeaderLostError                        a component lost leadership (fencing)
│   └── PossibleInconsistentStateError       a fenced write's outcome is unknown
├── StateMigrationError                    restored state does not fit the descriptor reading it
├── QueryableStateError                    a query of a running job's state could not be answered
│   ├── UnknownKvStateLocationError (KeyError)        no state registered under that name
│   ├── UnknownKvStateKeyGroupLocationError           no subtask serves the key's key group now
│   ├── UnknownKvStateIdError (KeyError)              the TaskManager no longer holds that state
│   └── UnknownKeyOrNamespaceError (KeyError)         the state holds nothing for that key
└── CheckpointError                        a checkpoint could not be taken, stored or restored
    └── CorruptCheckpointError             a checkpoint file is missing, cut short or corrupt
"""

from __future__ import annotations


class WeirError(Exception):
    """Root of every error Weir raises on purpose."""


class ConfigurationError(WeirError, ValueError):
    """A configuration key is unknown or its value cannot be used."""


class MissingDependencyError(ConfigurationError, ImportError):
    """A setting needs a Python package that is not installed in this environment
    (``weir.core.optional_dependency``)."""


class JobGraphError(WeirError, ValueError):
    """The program cannot be turned into a JobGraph (or a JobGraph cannot be decoded)."""


class JobSubmissionError(WeirError):
    """The Dispatcher refused a job."""


class JobNotFoundError(WeirError, KeyError):
    """No job with the given id is known."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "job not found"


class InvalidJobIdError(WeirError, ValueError):
    """A job id from outside is not 32 hex digits."""


class JobExecutionError(WeirError):
    """A job did not finish: it FAILED or was CANCELED.

    ``cause`` holds the remote failure text, with the user's traceback when user code
    raised.
    """

    def __init__(self, message: str, *, job_id: str = "", status: str = "", cause: str = ""):
        super().__init__(message)
        self.job_id = job_id
        self.status = status
        self.cause = cause


class SlotAllocationError(WeirError):
    """Slots could not be allocated within ``slot.request.timeout``."""


class TaskManagerLostError(WeirError):
    """A TaskManager stopped heart-beating or its process died."""


class TaskManagerNotFoundError(WeirError, KeyError):
    """No registered TaskManager has the given resource id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "TaskManager not found"


class DeploymentVersionError(WeirError):
    """A TaskManager refused a task deployment descriptor of another version."""


class InvalidRequestError(WeirError, ValueError):
    """A field of a request from another process holds what its server cannot decode (a
    value of no known kind, bytes of another format). ``field`` is its path in the request
    message, e.g. ``options.checkpoint_type``."""

    def __init__(self, message: str, *, field: str = ""):
        super().__init__(message)
        self.field = field


class RemoteError(WeirError):
    """A call to another Weir service failed."""

    def __init__(self, message: str, *, code: str = ""):
        super().__init__(message)
        self.code = code


class ServiceUnavailableError(RemoteError, ConnectionError):
    """The service could not be reached."""


class RemoteTimeoutError(RemoteError, TimeoutError):
    """The service did not answer in time."""


class AuthenticationError(RemoteError, PermissionError):
    """The service refused the call: no, or the wrong, certificate or token (UNAUTHENTICATED),
    or the TLS handshake with it failed."""


class NetworkError(WeirError, ConnectionError):
    """The data plane lost a connection or could not find a partition."""


class ProducerFailedError(NetworkError):
    """A consumer lost an input because the task producing it failed or was cancelled
    (Flink's ProducerFailedException). A consequence: the producer reports its own
    failure, which is the cause to show."""


class RecordTooLargeError(WeirError, ValueError):
    """A record, serialized alone, is larger than ``taskmanager.network.max-frame-size``."""


class RecordSerializationError(WeirError, TypeError):
    """A record an operator emitted to another task cannot be serialized (pickled)."""


class UnhashableKeyError(WeirError, TypeError):
    """A key selector returned a key the keyed state backend cannot hash (a list)."""


class DeclaredTypeError(WeirError, TypeError):
    """An operator emitted a record its declared output type cannot take (a str for a
    ``Types.LONG()``, a list for a ``Types.TUPLE``), where PyFlink's serializer would write
    it (``weir.core.type_coders``); the message names the operator, the type and the
    record. The same record fails the job again after a restart."""


class UserCodeError(WeirError):
    """User code raised inside a task. ``remote_traceback`` is the formatted original."""

    def __init__(self, message: str, remote_traceback: str = ""):
        super().__init__(message)
        self.remote_traceback = remote_traceback


class UserSystemExitError(UserCodeError):
    """User code called ``os._exit`` on a task thread, and the TaskManager refused to end
    (``cluster.intercept-user-system-exit: THROW``)."""


class NonRecoverableError(WeirError):
    """A failure no restart can cure: a task that raises it (or an error caused by it)
    fails its job at once, whatever the restart strategy allows, as Flink fails a job on
    an error it classifies ``ThrowableType.NonRecoverableError``
    (``SuppressRestartsException``). A refused configuration, a missing resource that
    nothing will create, credentials a server refuses: the same attempt again meets the
    same error. User code may raise it (or subclass it) to end a job for good::

        def map(self, value):
            if value.schema_version > SUPPORTED:
                raise NonRecoverableError(f"schema {value.schema_version} is unsupported")

    ``weir.core.throwable_classifier`` finds it in a failure's chain of causes."""


class LeaderLostError(WeirError):
    """A component acted without (or after losing) leadership."""


class PossibleInconsistentStateError(LeaderLostError):
    """A fenced write to ZooKeeper may or may not have been applied: its reply was lost
    with the connection (Flink's ``PossibleInconsistentStateException``). What it was to
    register must not be deleted: it may be registered."""


class StateMigrationError(WeirError):
    """Restored state was written in a form the state now registered cannot read (e.g. a
    TTL was enabled or disabled on its descriptor between the snapshot and the restore)."""


class QueryableStateError(WeirError):
    """A query of a running job's keyed state (queryable state) could not be answered."""

    def __str__(self) -> str:  # KeyError subclasses would quote the message
        return str(self.args[0]) if self.args else type(self).__name__


class UnknownKvStateLocationError(QueryableStateError, KeyError):
    """No operator of the job registered a queryable state under that name (Flink's
    UnknownKvStateLocation)."""


class UnknownKvStateKeyGroupLocationError(QueryableStateError):
    """No running subtask serves the key group of the key just now: the job is (re)starting
    (Flink's UnknownKvStateKeyGroupLocationException). Asking again later may succeed."""


class UnknownKvStateIdError(QueryableStateError, KeyError):
    """The TaskManager asked holds no such state (any more): its task ended (Flink's
    UnknownKvStateIdException)."""


class UnknownKeyOrNamespaceError(QueryableStateError, KeyError):
    """The state holds no value for the key (Flink's UnknownKeyOrNamespaceException)."""


class CheckpointError(WeirError):
    """A checkpoint could not be triggered, completed, stored or restored."""


class CorruptCheckpointError(CheckpointError):
    """A checkpoint file is missing, truncated, or its checksum does not match.

    ``path`` names the file (or the in-memory location) that failed.
    """

    def __init__(self, message: str, *, path: str = ""):
        super().__init__(message)
        self.path = path
