"""FileSource → map → FileSink on the MiniCluster: bounded input commits at the end."""

from __future__ import annotations

import pytest

from weir.common import Types, WatermarkStrategy
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.connectors import FileSink, FileSource, OutputFileConfig, StreamFormat
from weir.datastream.connectors.file_system import BucketAssigner, Encoder

pytestmark = pytest.mark.spark


def test_file_source_map_file_sink(cluster, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    expected = []
    for f in range(4):
        lines = [f"file {f} line {i}" for i in range(250)]
        (src / f"part{f}.txt").write_text("\n".join(lines) + "\n")
        expected += [line.upper() for line in lines]
    out = tmp_path / "out"

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), f"file://{src}"
    ).build()
    sink = (
        FileSink.for_row_format(f"file://{out}", Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_output_file_config(
            OutputFileConfig.builder().with_part_prefix("out").with_part_suffix(".txt").build()
        )
        .build()
    )
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "files")
        .map(str.upper, output_type=Types.STRING())
        .sink_to(sink)
    )
    env.execute("file connectors")

    files = sorted(p for p in out.rglob("*") if p.is_file())
    assert files and all(p.name.startswith("out-") and p.name.endswith(".txt") for p in files)
    lines = [line for p in files for line in p.read_text().splitlines()]
    assert sorted(lines) == sorted(expected)
