"""What a failed lease's Spark job is reported as: the Python worker's own error out of
the JVM's message (texts as Spark 4 words them)."""

from __future__ import annotations

from weir.resourcemanager.spark_launcher import lease_error

JVM_STACK = (
    "\tat org.apache.spark.scheduler.ResultTask.runTask(ResultTask.scala:93)\n"
    "\tat java.base/java.lang.Thread.run(Thread.java:840)\n"
)


def test_a_python_worker_that_could_not_start_is_reported_by_its_own_stderr() -> None:
    text = (
        "An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage "
        "3.0 failed 1 times, most recent failure: Lost task 0.0 in stage 3.0 (TID 3) "
        "(localhost executor driver): org.apache.spark.SparkException: \n"
        "Error from python worker:\n"
        "  /usr/bin/python3: Error while finding module specification for "
        "'weir.taskmanager.spark_daemon' (ModuleNotFoundError: No module named 'weir')\n"
        "PYTHONPATH was:\n"
        "  /opt/spark/python/lib/pyspark.zip\n"
        "org.apache.spark.SparkException: EOFException occurred while reading the port number\n"
        + JVM_STACK
    )
    error = lease_error(Exception(text))
    assert error.startswith("/usr/bin/python3: Error while finding module specification")
    assert "No module named 'weir'" in error
    assert "spark.pyspark.python / PYSPARK_PYTHON" in error  # what to do
    assert "PYTHONPATH" not in error
    assert "\tat " not in error


def test_a_python_exception_on_the_executor_is_reported_by_its_last_line() -> None:
    text = (
        "An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.\n"
        ": org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An exception was "
        "thrown from the Python worker: Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.11/site-packages/pyspark/worker.py", line 4327, in invoke_udf\n'
        "    run_process()\n"
        '  File "/venv/lib/python3.11/site-packages/weir/taskmanager/spark_entry.py", line 9\n'
        "    raise ValueError('taskmanager.numberOfTaskSlots: expected a positive integer')\n"
        "ValueError: taskmanager.numberOfTaskSlots: expected a positive integer\n"
        " SQLSTATE: 38000\n" + JVM_STACK
    )
    error = lease_error(Exception(text))
    assert error == "ValueError: taskmanager.numberOfTaskSlots: expected a positive integer"


def test_a_missing_module_other_than_weirs_gets_no_hint_about_the_python() -> None:
    text = (
        "PythonException: Traceback (most recent call last):\n"
        '  File "job.py", line 3, in f\n'
        "    import weir.nonexistent\n"
        "ModuleNotFoundError: No module named 'weir.nonexistent'\n" + JVM_STACK
    )
    assert lease_error(Exception(text)) == (
        "ModuleNotFoundError: No module named 'weir.nonexistent'"
    )


def test_any_other_error_keeps_its_first_lines_and_no_stack() -> None:
    text = "Job 12 cancelled part of cancelled job group weir-lease-ab\nline two\nline three\n"
    assert lease_error(Exception(text + JVM_STACK)) == (
        "Job 12 cancelled part of cancelled job group weir-lease-ab line two line three"
    )
    assert lease_error(Exception("")) == "Exception"
