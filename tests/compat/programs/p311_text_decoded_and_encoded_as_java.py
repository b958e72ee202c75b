"""Text formats decode and encode as Java does: a FileSource's text lines are read as Java's
InputStreamReader and BufferedReader.readLine read them (bytes that are not valid in the
charset become U+FFFD, one per malformed sequence as Java counts them, and '\\r' ends a line
as '\\n' and '\\r\\n' do), so a bad record does not fail the job; a FileSink's simple string
encoder writes a character its charset cannot encode as '?'. Lines print as ASCII."""

import os
import tempfile

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.serialization import Encoder
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSink, FileSource, StreamFormat

root = tempfile.mkdtemp()
inputs = {
    "UTF-8": b"plain\nbad \xff\xfe end\ntruncated \xe2\x82\nsurrogate \xed\xa0\x80 and \xed\xbf\n"
    b"overlong \xc0\xaf\ncr\ronly\r\nlast \xf0\x9d\x84\x9e ok",
    "ISO-8859-1": b"caf\xe9\nna\xefve\r\n",
    "UTF-16": b"\xfe\xff\x00h\x00i\x00\n\xd8\x00\x00x\x00\n\x00e\x00n\x00d",
}
env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.set_parallelism(1)
for charset, data in inputs.items():
    directory = os.path.join(root, charset)
    os.makedirs(directory)
    with open(os.path.join(directory, "in.txt"), "wb") as f:
        f.write(data)
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(charset), directory
    ).build()
    env.from_source(source, WatermarkStrategy.no_watermarks(), charset).map(
        lambda line, cs=charset: "%s %d %s" % (cs, len(line), ascii(line)),
        output_type=Types.STRING(),
    ).print()
out = os.path.join(root, "out")
words = env.from_collection(["caf\u00e9", "\u20ac5", "\U0001d11e clef"], type_info=Types.STRING())
words.sink_to(FileSink.for_row_format(out, Encoder.simple_string_encoder("ISO-8859-1")).build())
env.execute("text as java")
written = []
for directory, _, names in os.walk(out):
    for name in names:
        if not name.startswith("."):
            with open(os.path.join(directory, name), "rb") as f:
                written.append(f.read())
print("written", sorted(written))
