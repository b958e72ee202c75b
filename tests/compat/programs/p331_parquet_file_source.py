# partitioning: random
"""A FileSource of Parquet files (ParquetColumnarRowInputFormat, for_bulk_file_format):
records are Rows of the declared row type's fields, found in the file by name (ignoring
case when asked), a field the file lacks null, each type as PyFlink hands it to Python
(DECIMAL a Decimal, DATE a date, TIMESTAMP a datetime to the millisecond, FLOAT single
precision), read at parallelism 2 (which subtask reads a file varies) into a keyed running
sum (each key's records in one file).

PyFlink needs flink-sql-parquet and Hadoop's client jars for it: they are taken from
Maven's local repository when there (``mvn dependency:get``); Weir needs no jar."""

import datetime
import decimal
import os
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
from pyflink.common import Types, WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSource
from pyflink.datastream.formats.parquet import ParquetColumnarRowInputFormat
from pyflink.table import DataTypes

REPOSITORY = os.path.expanduser("~/.m2/repository/org/apache/")
JARS = [
    "flink/flink-sql-parquet/2.3.0/flink-sql-parquet-2.3.0.jar",
    "hadoop/hadoop-client-api/3.5.0/hadoop-client-api-3.5.0.jar",
    "hadoop/hadoop-client-runtime/3.5.0/hadoop-client-runtime-3.5.0.jar",
]

root = tempfile.mkdtemp()
for part in range(2):
    n = 5
    table = pa.table(
        {
            "Key": pa.array([part * 10 + i % 2 for i in range(n)], pa.int32()),
            "amount": pa.array([part * 100 + i for i in range(n)], pa.int64()),
            "name": [None if i == 2 else f"n{part}{i}" for i in range(n)],
            "price": pa.array(
                [decimal.Decimal(f"{i}.{part}5") for i in range(n)], pa.decimal128(6, 2)
            ),
            "day": pa.array([datetime.date(2024, 1, 1 + i) for i in range(n)], pa.date32()),
            "at": pa.array(
                [datetime.datetime(2024, 1, 2, 3, 4, 5, 123456 + i) for i in range(n)],
                pa.timestamp("us"),
            ),
            "ratio": pa.array([0.1 * i for i in range(n)], pa.float32()),
            "flag": [i % 2 == 0 for i in range(n)],
        }
    )
    # Flink's vectorized reader takes no dictionary-encoded decimals; uncompressed, as
    # Hadoop's codec pool logs to stdout.
    pq.write_table(
        table,
        os.path.join(root, f"part-{part}.parquet"),
        row_group_size=2,
        use_dictionary=False,
        compression="NONE",
    )

row_type = DataTypes.ROW(
    [
        DataTypes.FIELD("key", DataTypes.INT()),
        DataTypes.FIELD("amount", DataTypes.BIGINT()),
        DataTypes.FIELD("name", DataTypes.STRING()),
        DataTypes.FIELD("price", DataTypes.DECIMAL(6, 2)),
        DataTypes.FIELD("day", DataTypes.DATE()),
        DataTypes.FIELD("at", DataTypes.TIMESTAMP(3)),
        DataTypes.FIELD("ratio", DataTypes.FLOAT()),
        DataTypes.FIELD("flag", DataTypes.BOOLEAN()),
        DataTypes.FIELD("absent", DataTypes.DOUBLE()),
    ]
)
env = StreamExecutionEnvironment.get_execution_environment()
env.add_jars(*("file://" + REPOSITORY + jar for jar in JARS if os.path.exists(REPOSITORY + jar)))
env.set_parallelism(2)
parquet = ParquetColumnarRowInputFormat(row_type, batch_size=3, is_case_sensitive=False)
source = FileSource.for_bulk_file_format(parquet, root).build()
rows = env.from_source(source, WatermarkStrategy.no_watermarks(), "parquet")
rows.map(
    lambda r: "row %r %s" % (r, [type(v).__name__ for v in r]), output_type=Types.STRING()
).print()
(
    rows.map(lambda r: (r.key, r.amount), output_type=Types.TUPLE([Types.INT(), Types.LONG()]))
    .key_by(lambda t: t[0])
    .reduce(lambda a, b: (a[0], a[1] + b[1]))
    .map(lambda t: "sum %d %d" % t, output_type=Types.STRING())
    .print()
)
env.execute("parquet files")
