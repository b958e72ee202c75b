"""Requirements a job installs with set_python_requirements from a directory of packages (no
package index): its functions import them, in open() and in map()."""

import base64
import hashlib
import os
import tempfile
import zipfile

from pyflink.common import Types
from pyflink.datastream import MapFunction, StreamExecutionEnvironment

NAME = "weir_compat_shapes"


def wheel(directory, source):
    """A wheel of one pure-Python module, as `pip wheel` would build it."""
    dist = f"{NAME}-1.0"
    files = {
        f"{NAME}.py": source,
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {NAME}\nVersion: 1.0\n",
        f"{dist}.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: by-hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{dist}.dist-info/RECORD,,")
    files[f"{dist}.dist-info/RECORD"] = "\n".join(record) + "\n"
    with zipfile.ZipFile(os.path.join(directory, f"{dist}-py3-none-any.whl"), "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)


directory = tempfile.mkdtemp()
cache = os.path.join(directory, "cache")
os.mkdir(cache)
wheel(
    cache,
    "SIDES = {'triangle': 3, 'square': 4}\n\n"
    "def describe(shape, size):\n"
    "    return f'{shape} of side {size}: perimeter {SIDES[shape] * size}'\n",
)
requirements = os.path.join(directory, "requirements.txt")
with open(requirements, "w") as f:
    f.write(f"{NAME}==1.0\n")


class Describe(MapFunction):
    def open(self, runtime_context):
        from weir_compat_shapes import SIDES

        self.known = sorted(SIDES)

    def map(self, value):
        from weir_compat_shapes import describe

        return f"{describe(*value)} (known: {', '.join(self.known)})"


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.set_python_requirements(requirements, cache)
env.from_collection(
    [("triangle", 2), ("square", 5)], type_info=Types.TUPLE([Types.STRING(), Types.INT()])
).map(Describe(), output_type=Types.STRING()).print()
env.execute("python requirements")
