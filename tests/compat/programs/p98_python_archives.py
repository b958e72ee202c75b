# partitioning: random
"""Archives a job ships with add_python_archive: each is extracted in the working directory of
the job's Python functions, under its target directory (or, without one, under the archive's
file name), where a function reads its files by relative path; zip and tar.gz alike."""

import os
import shutil
import tempfile
import zipfile

from pyflink.common import Types
from pyflink.datastream import MapFunction, StreamExecutionEnvironment

directory = tempfile.mkdtemp()
offsets = os.path.join(directory, "offsets.zip")
with zipfile.ZipFile(offsets, "w") as archive:
    archive.writestr("offset.txt", "100")
    archive.writestr("nested/scale.txt", "3")
words = os.path.join(directory, "words")
os.makedirs(os.path.join(words, "lists"))
with open(os.path.join(words, "lists", "names.txt"), "w") as f:
    f.write("zero one two three four")
words_archive = shutil.make_archive(words, "gztar", words)


class FromArchives(MapFunction):
    def open(self, runtime_context):
        with open("data/offset.txt") as f:
            self.offset = int(f.read())
        with open(os.path.join("data", "nested", "scale.txt")) as f:
            self.scale = int(f.read())
        with open("words.tar.gz/lists/names.txt") as f:
            self.names = f.read().split()

    def map(self, value):
        return f"{self.names[value]}: {value * self.scale + self.offset}"


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
env.add_python_archive(offsets, "data")
env.add_python_archive(words_archive)
env.from_collection([0, 1, 2, 3, 4], type_info=Types.INT()).map(
    FromArchives(), output_type=Types.STRING()
).print()
env.execute("python archives")
