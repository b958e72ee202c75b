"""In-band task events: what travels on a channel in order with the records.

An event is sent with ``ResultPartitionWriter.emit_event``/``broadcast_event`` and
arrives as a ``BufferKind.EVENT`` payload. The encoding is one tag byte followed by
a marshalled tuple of the event's fields, so a new event type only needs a tag and
a dataclass.
"""

from __future__ import annotations

import marshal
from dataclasses import astuple, dataclass

from weir.core.checkpoint import CheckpointType
from weir.core.errors import WeirError

_MARSHAL_VERSION = 4


class TaskEventError(WeirError, ValueError):
    """An event payload could not be decoded."""


@dataclass(frozen=True, slots=True)
class Watermark:
    timestamp: int
    """Event time in ms; records with a timestamp at or below it are late."""


@dataclass(frozen=True, slots=True)
class WatermarkStatus:
    idle: bool
    """True: the producer stopped holding back watermarks downstream; False: it resumed."""


@dataclass(frozen=True, slots=True)
class CheckpointBarrier:
    checkpoint_id: int
    timestamp: int
    """When the coordinator triggered it (ms since the epoch)."""
    checkpoint_type: str = CheckpointType.CHECKPOINT.value
    unaligned: bool = False
    target_location: str = ""
    """A savepoint's directory, where every task writes its state; empty for checkpoints."""
    end_of_data: bool = False
    """The sender's operators had finished when it sent this barrier (its EndOfData is
    out): it adds no record to the channel after it, so what is still to come on the
    channel is bounded, and its producer may finish with some of it still on the way.
    Set by each task for the barriers it sends, never forwarded from its inputs."""


@dataclass(frozen=True, slots=True)
class EndOfData:
    """The producer reached the end of its input: no record follows. Its channel stays
    open for checkpoint barriers until END_OF_PARTITION, which comes once the producer's
    final checkpoint completed (FLIP-147)."""


TaskEvent = Watermark | WatermarkStatus | CheckpointBarrier | EndOfData

_TAGS: dict[type, int] = {  # W S B E
    Watermark: 0x57,
    WatermarkStatus: 0x53,
    CheckpointBarrier: 0x42,
    EndOfData: 0x45,
}
_TYPES = {tag: cls for cls, tag in _TAGS.items()}


def serialize_event(event: TaskEvent) -> bytes:
    tag = _TAGS.get(type(event))
    if tag is None:
        msg = f"not a task event: {event!r}; expected one of {sorted(c.__name__ for c in _TAGS)}"
        raise TaskEventError(msg)
    return bytes((tag,)) + marshal.dumps(astuple(event), _MARSHAL_VERSION)


def deserialize_event(payload: bytes | memoryview) -> TaskEvent:
    if not payload:
        msg = "empty task event payload"
        raise TaskEventError(msg)
    cls = _TYPES.get(payload[0])
    if cls is None:
        msg = (
            f"unknown task event tag {payload[0]!r}: the sender and receiver run "
            "different Weir versions?"
        )
        raise TaskEventError(msg)
    # only marshalled tuples of ints, strs and bools come from our own serialize_event
    fields = marshal.loads(bytes(payload[1:]))  # noqa: S302
    return cls(*fields)  # type: ignore[no-any-return]
