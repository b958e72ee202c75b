"""Errors of the Kafka connector::

    WeirError
    └── KafkaConnectorError
        ├── KafkaClientMissingError      (ImportError) the `kafka` extra is not installed
        ├── KafkaConfigurationError      (ValueError)  a builder setting or property is wrong *
        ├── KafkaUnreachableError        (ConnectionError) no broker answered in time
        ├── KafkaAuthenticationError     (PermissionError) the brokers refused the credentials *
        ├── KafkaTopicNotFoundError      (LookupError) a topic does not exist *
        ├── KafkaDeserializationError    (ValueError)  a record's bytes do not deserialize
        ├── KafkaProduceError            a record could not be written
        └── KafkaTransactionError        a transaction could not be begun, committed or resumed
            └── KafkaProducerFencedError another producer took over a transactional id

Every message names the setting to change. Those marked * are ``NonRecoverableError`` too:
no restart can cure them (the brokers refuse the same configuration and credentials
again, and a missing topic stays missing when the brokers do not create topics), so a
task that raises one fails its job at once, whatever the restart strategy allows.
"""

from __future__ import annotations

from weir.core.errors import NonRecoverableError, WeirError

__all__ = [
    "KafkaAuthenticationError",
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


class KafkaConfigurationError(KafkaConnectorError, NonRecoverableError, ValueError):
    """A builder setting or client property is missing or wrong, or the brokers refuse it
    (a ``transaction.timeout.ms`` above their ``transaction.max.timeout.ms``)."""


class KafkaUnreachableError(KafkaConnectorError, ConnectionError):
    """No broker of ``bootstrap.servers`` answered in time."""


class KafkaAuthenticationError(KafkaConnectorError, NonRecoverableError, PermissionError):
    """The brokers refused the client's SASL credentials (``sasl.username``,
    ``sasl.password``, ``sasl.mechanism``)."""


class KafkaTopicNotFoundError(KafkaConnectorError, NonRecoverableError, LookupError):
    """A topic the source reads or the sink writes does not exist (and the brokers do not
    create it: ``auto.create.topics.enable`` is off), or its metadata names another
    error of the topic (its name is invalid, the client may not see it)."""


class KafkaDeserializationError(KafkaConnectorError, ValueError):
    """The deserialization schema failed on a record."""


class KafkaProduceError(KafkaConnectorError):
    """The broker refused or lost a record the sink wrote."""


class KafkaTransactionError(KafkaConnectorError):
    """A Kafka transaction of the exactly-once sink failed."""


class KafkaProducerFencedError(KafkaTransactionError):
    """Another producer initialised the sink's transactional id and fenced it off."""
