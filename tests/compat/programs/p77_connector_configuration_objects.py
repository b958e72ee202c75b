"""Configuring connectors as PyFlink programs do: a NumberSequenceSource and a FileSource of
text lines read back what they were given, a FileSink with its rolling policy and part-file
names writes committed files, and the job reading the source prints its lines."""

import os
import tempfile

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.serialization import Encoder
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import (
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

directory = tempfile.mkdtemp()
path = os.path.join(directory, "in.txt")
with open(path, "w") as f:
    f.write("alpha\nbeta\ngamma\n")

sequence = NumberSequenceSource(3, 7)
print(sequence.get_boundedness() if hasattr(sequence, "get_boundedness") else "bounded")

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.enable_checkpointing(200)
source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), path).build()
lines = env.from_source(source, WatermarkStrategy.no_watermarks(), "file")
lines.print("line")
out = os.path.join(directory, "out")
sink = (
    FileSink.for_row_format(out, Encoder.simple_string_encoder())
    .with_output_file_config(
        OutputFileConfig.builder().with_part_prefix("part").with_part_suffix(".txt").build()
    )
    .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
    .build()
)
lines.map(lambda s: s.upper(), output_type=Types.STRING()).sink_to(sink)
env.from_source(sequence, WatermarkStrategy.no_watermarks(), "sequence").print("number")
env.execute("connectors")
written = []
for root, _, files in os.walk(out):
    for name in files:
        if not name.startswith("."):
            assert name.startswith("part") and name.endswith(".txt"), name
            with open(os.path.join(root, name)) as f:
                written.extend(f.read().split())
print(sorted(written))
