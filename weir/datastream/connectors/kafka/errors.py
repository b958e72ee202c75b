"""Errors of the Kafka connector::

    WeirError
    └── KafkaConnectorError
        ├── KafkaClientMissingError      (ImportError) the `kafka` extra is not installed
        ├── KafkaConfigurationError      (ValueError)  a builder setting or property is wrong
        ├── KafkaUnreachableError        (ConnectionError) no broker answered in time
        ├── KafkaTopicNotFoundError      (LookupError) a topic does not exist
        ├── KafkaDeserializationError    (ValueError)  a record's bytes do not deserialize
        ├── KafkaProduceError            a record could not be written
        └── KafkaTransactionError        a transaction could not be begun, committed or resumed
            └── KafkaProducerFencedError another producer took over a transactional id

Every message names the setting to change.
"""

from __future__ import annotations

from weir.core.errors import WeirError

__all__ = [
    "KafkaClientMissingError",
    "KafkaConfigurationError",
    "KafkaConnectorError",
    "KafkaDeserializationError",
    "KafkaProduceError",
    "KafkaProducerFencedError",
    "KafkaTopicNotFoundError",
    "KafkaTransactionError",
    "KafkaUnreachableError",
]


class KafkaConnectorError(WeirError):
    """The Kafka source or sink failed."""


class KafkaClientMissingError(KafkaConnectorError, ImportError):
    """The Kafka client libraries (the ``kafka`` extra) are not installed."""


class KafkaConfigurationError(KafkaConnectorError, ValueError):
    """A builder setting or client property is missing or wrong."""


class KafkaUnreachableError(KafkaConnectorError, ConnectionError):
    """No broker of ``bootstrap.servers`` answered in time."""


class KafkaTopicNotFoundError(KafkaConnectorError, LookupError):
    """A topic the source reads or the sink writes does not exist."""


class KafkaDeserializationError(KafkaConnectorError, ValueError):
    """The deserialization schema failed on a record."""


class KafkaProduceError(KafkaConnectorError):
    """The broker refused or lost a record the sink wrote."""


class KafkaTransactionError(KafkaConnectorError):
    """A Kafka transaction of the exactly-once sink failed."""


class KafkaProducerFencedError(KafkaTransactionError):
    """Another producer initialised the sink's transactional id and fenced it off."""
