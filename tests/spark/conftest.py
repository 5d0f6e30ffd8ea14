"""One local SparkSession for the whole Spark suite, with fast start-up
settings (C1-only JIT, serial GC, no UI: about 5 s instead of 10+ on 2 cores).

Spark's Python workers are separate processes that import ``rowformat`` and
the ``pyspark_rowformat`` registration module from the virtualenv.
"""
import os
import sys

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: it comes with the [spark] "
                    "extra, not [test] (bash run.sh test installs both)")

# Workers run PYSPARK_PYTHON (default: python3 from PATH, which lacks our
# packages when the venv is not activated).
os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

FAST_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.sql.session.timeZone": "UTC",
    # C1-only JIT and serial GC: the biggest start-up win for short JVM lives.
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    from pyspark.sql import SparkSession

    # Spark's Python workers inherit the JVM's working directory and look
    # for pyspark_* modules on their sys.path, which includes it: start in an
    # empty directory, so that only the installed registration module counts.
    os.chdir(tmp_path_factory.mktemp("spark-cwd"))

    builder = SparkSession.builder.master("local[2]").appName("rowformat-spark-tests")
    for k, v in FAST_CONF.items():
        builder = builder.config(k, v)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    # No register(): the paimon-row source must be found through the
    # installed pyspark_rowformat module (test_registration checks it).
    yield session
    session.stop()


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """test_cluster.py's standalone cluster (two workers that cannot see
    this venv, the checkout's wheel packed as docs/spark.md's archive):
    here, so that test_connect.py's Connect server runs on the same one."""
    from .test_cluster import cluster_session
    yield from cluster_session(tmp_path_factory)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "cluster: starts Spark processes of its own (a standalone cluster, a Spark "
        "Connect server) from pyspark's jars on 127.0.0.1; -m 'not cluster' leaves them out")
