"""Kafka transactions as the exactly-once sink needs them, beyond what librdkafka offers.

**Transactional ids** follow Flink's scheme, ``{prefix}-{subtask}-{n}``: the transaction a
subtask opens after checkpoint ``c`` is number ``c + 1``. Two jobs never share ids if
their prefixes differ; attempts of one job reuse the ids after the checkpoint they
restored, and a producer initialised with an id fences (and aborts the transaction of)
any earlier producer of that id, which is how a zombie attempt is shut out.

**Resuming a pre-committed transaction.** A transaction is pre-committed at a checkpoint
(flushed: every record acknowledged, nothing visible) and committed when the checkpoint
completes. If the process dies in between, the restored job must commit it. A new
producer that calls ``init_transactions`` with the same id would *abort* it, losing its
records. Flink resumes it with the producer id and epoch stored in the checkpoint and
sends the commit (EndTxn) itself. So do we: once a transaction's producer is initialised,
the coordinator is asked for its producer id and epoch (DescribeTransactions, KIP-664),
which go into the checkpoint with the pre-committed transaction; on recovery EndTxn
(commit) is sent with them. The coordinator commits an Ongoing transaction of that
producer and epoch, answers a retry of a completed commit with success, and refuses a
transaction that was aborted (expired after ``transaction.timeout.ms``, or fenced),
which is reported as possible data loss.

KIP-939 (``transaction.two.phase.commit.enable`` and ``init_transactions(keep_prepared)``)
is the newer way to do this; neither Python client implements it (kafka-python 3.0.12
drives InitProducerId up to v4, librdkafka 2.16 not at all), and it needs the broker's
``transaction.two.phase.commit.enable``. These requests (DescribeTransactions,
ListTransactions, EndTxn) go through kafka-python, which speaks Kafka's protocol from
Python; librdkafka keeps the data path.

**Lingering transactions.** On every start a subtask aborts the Ongoing transactions of
its prefix that earlier attempts left open (ListTransactions), taking those whose subtask
``j`` has ``j % parallelism == subtask`` (so after a scale-down the surplus subtasks'
are aborted too), except those it was just given to commit. Aborting is
``init_transactions`` with that id.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from weir.datastream.connectors.kafka._client import (
    client_config,
    confluent,
    kafka_python,
    make_client,
)
from weir.datastream.connectors.kafka.errors import KafkaTransactionError

logger = logging.getLogger(__name__)


def transactional_id(prefix: str, subtask: int, number: int) -> str:
    return f"{prefix}-{subtask}-{number}"


def parse_transactional_id(prefix: str, tid: str) -> tuple[int, int] | None:
    """``(subtask, number)`` of an id of ``prefix``, None for an id of another prefix."""
    match = re.fullmatch(re.escape(prefix) + r"-(\d+)-(\d+)", tid)
    return None if match is None else (int(match.group(1)), int(match.group(2)))


@dataclass(frozen=True, slots=True)
class PreparedTransaction:
    """A pre-committed transaction as the checkpoint keeps it."""

    transactional_id: str
    producer_id: int
    epoch: int
    checkpoint_id: int


class TransactionCoordinatorClient:
    """The transaction coordinator requests librdkafka lacks, through kafka-python's
    admin client (one connection set per sink subtask, opened on first use)."""

    def __init__(self, bootstrap_servers: str, timeout_ms: int, properties: dict[str, str]):
        self._bootstrap_servers = bootstrap_servers
        self._timeout_ms = timeout_ms
        self._properties = properties
        self._admin: Any = None

    def _client(self) -> Any:
        if self._admin is None:
            kafka = kafka_python()
            security = {
                key.replace(".", "_"): value
                for key, value in self._properties.items()
                if key in ("security.protocol", "sasl.mechanism")
            }
            try:
                self._admin = kafka.KafkaAdminClient(
                    bootstrap_servers=self._bootstrap_servers,
                    request_timeout_ms=self._timeout_ms,
                    client_id="weir-kafka-sink-transactions",
                    **security,
                )
            except kafka.errors.KafkaError as exc:
                msg = (
                    "cannot reach the Kafka cluster at bootstrap.servers="
                    f"{self._bootstrap_servers!r} to manage transactions ({exc}); check "
                    "set_bootstrap_servers(...) and that the brokers are up"
                )
                raise KafkaTransactionError(msg) from exc
        return self._admin

    def describe(self, tid: str) -> Any:
        """The coordinator's view of ``tid``: state, producer id and epoch."""
        return self._client().describe_transactions([tid])[tid]

    def producer_of(self, tid: str) -> tuple[int, int]:
        """The producer id and epoch the coordinator holds for ``tid`` (after
        ``init_transactions``: those its next transaction runs with)."""
        description = self.describe(tid)
        return int(description.producer_id), int(description.producer_epoch)

    def commit(self, prepared: PreparedTransaction) -> bool:
        """Commits a pre-committed transaction left by an earlier attempt (EndTxn with its
        producer id and epoch). True when it is committed (now or before); False when
        the coordinator no longer has it to commit (aborted or expired), logged as
        possible data loss."""
        kafka = kafka_python()
        errors = kafka.errors
        CoordinatorType = kafka.protocol.metadata.CoordinatorType
        EndTxnRequest = kafka.protocol.producer.transaction.EndTxnRequest

        admin = self._client()
        tid = prepared.transactional_id

        async def end_transaction() -> Any:
            coordinators = await admin._find_coordinator_ids(
                [tid], key_type=CoordinatorType.TRANSACTION
            )
            request = EndTxnRequest(
                transactional_id=tid,
                producer_id=prepared.producer_id,
                producer_epoch=prepared.epoch,
                committed=True,
                max_version=3,
            )
            return await admin._manager.send(request, node_id=coordinators[tid])

        for _attempt in range(10):
            response = admin._manager.run(end_transaction)
            error = errors.for_code(response.error_code)
            if error is errors.NoError:
                logger.info(
                    "committed transaction %s of checkpoint %d on recovery",
                    tid,
                    prepared.checkpoint_id,
                )
                return True
            if error in (
                errors.CoordinatorLoadInProgressError,
                errors.NotCoordinatorError,
                errors.ConcurrentTransactionsError,
                errors.CoordinatorNotAvailableError,
            ):
                continue
            break
        description = self.describe(tid)
        if (
            description.state.value == "CompleteCommit"
            and description.producer_id == prepared.producer_id
        ):
            return True
        logger.warning(
            "the transaction %s of checkpoint %d (producer %d, epoch %d) could not be "
            "committed on recovery: the coordinator answered %s and reports it %s. Its "
            "records are lost if it was aborted: it expired after transaction.timeout.ms "
            "(raise it above the checkpoint interval plus the restart time), or another "
            "producer took its transactional id (give each job its own "
            "set_transactional_id_prefix)",
            tid,
            prepared.checkpoint_id,
            prepared.producer_id,
            prepared.epoch,
            error.__name__,
            description.state.value,
        )
        return False

    def ongoing(self, prefix: str) -> list[str]:
        """Transactional ids of ``prefix`` whose transaction is Ongoing."""
        listings = self._client().list_transactions(state_filters=["Ongoing"])
        return sorted(
            {
                listing.transactional_id
                for per_broker in listings.values()
                for listing in per_broker
                if parse_transactional_id(prefix, listing.transactional_id) is not None
            }
        )

    def close(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None:
            admin.close()


def abort_transaction(tid: str, producer_config: dict[str, Any]) -> None:
    """Aborts whatever transaction ``tid`` has open, fencing its producer: a producer of
    that id initialising its transactions does both."""
    kafka = confluent()
    producer = make_client(
        kafka.Producer,
        client_config({}, **producer_config, **{"transactional.id": tid}),
        "producer",
    )
    try:
        producer.init_transactions()
    except kafka.KafkaException as exc:
        msg = f"aborting the lingering Kafka transaction {tid} failed: {exc}"
        raise KafkaTransactionError(msg) from exc
    logger.info("aborted the lingering transaction %s", tid)
