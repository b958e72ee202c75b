# partitioning: random
"""A FileSource of CSV files (CsvSchema, CsvReaderFormat): records are Rows named after the
schema's columns, with each column's values as Flink's CSV format reads them (numbers of
every width, null literals, quoted separators and line breaks, arrays, a header), read at
parallelism 2 (which subtask reads a file varies) into a keyed running sum (each key's
records in one file)."""

import os
import tempfile

from pyflink.common import Types, WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSource
from pyflink.datastream.formats.csv import CsvReaderFormat, CsvSchema
from pyflink.table import DataTypes

root = tempfile.mkdtemp()
for part, rows in enumerate(
    [
        ["1,ann,true,1.5,a;b,7,0.1", '1,"b,\nc",false,-3,,8,2.5', "3,NULL, TRUE ,1e3,x,NULL,3"],
        ["4,dan,yes,+4.25,y;NULL,10,NULL", '4,"say ""hi""",false,NaN,z,11,0.5'],
    ]
):
    with open(os.path.join(root, f"part-{part}.csv"), "w") as f:
        f.write("id,name,ok,score,tags,n,small\n" + "\n".join(rows) + "\n")

schema = (
    CsvSchema.builder()
    .add_number_column("id", number_type=DataTypes.INT())
    .add_string_column("name")
    .add_boolean_column("ok")
    .add_number_column("score", number_type=DataTypes.DOUBLE())
    .add_array_column("tags", separator=";", element_type=DataTypes.STRING())
    .add_number_column("n")
    .add_number_column("small", number_type=DataTypes.FLOAT())
    .set_use_header()
    .set_null_value("NULL")
    .build()
)
print("columns", len(schema))
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
source = FileSource.for_record_stream_format(CsvReaderFormat.for_schema(schema), root).build()
rows = env.from_source(source, WatermarkStrategy.no_watermarks(), "csv")
rows.map(
    lambda r: "row %r %s" % (r, [type(v).__name__ for v in r]), output_type=Types.STRING()
).print()
(
    rows.map(lambda r: (r.id, r.n or 0), output_type=Types.TUPLE([Types.INT(), Types.LONG()]))
    .key_by(lambda t: t[0])
    .reduce(lambda a, b: (a[0], a[1] + b[1]))
    .map(lambda t: "sum %d %d" % t, output_type=Types.STRING())
    .print()
)
env.execute("csv files")
