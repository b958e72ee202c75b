"""Session-wide test setup: the interpreter Spark's Python workers must use, and logs."""

from __future__ import annotations

import logging
import os
import sys

# Spark's executors must run this same interpreter (the venv with Weir installed).
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
logging.getLogger("py4j").setLevel(logging.WARNING)
