"""rowformat.spark on Spark Connect: a real Connect server started from
pyspark's own jars on 127.0.0.1 (one for the test session, stopped by its
PID), and a client script in a process of its own (a Connect client and
this suite's classic session cannot share one Python process)."""
import os
import sys
import time

import pytest

from . import _procs

pytest.importorskip("grpc", reason="Spark Connect's client needs grpcio, grpcio-status and "
                    "googleapis-common-protos (bash run.sh setup installs them)")
pytest.importorskip("google.rpc", reason="Spark Connect's client needs googleapis-common-protos")

pytestmark = pytest.mark.cluster

HERE = os.path.dirname(os.path.abspath(__file__))


def start_connect_server(workdir: str, master: str, python: str, extra_env=None):
    """spark-submit ... SparkConnectServer on a free loopback port: (Proc, url)."""
    port = _procs.free_port()
    home = _procs.spark_home()
    cmd = [os.path.join(home, "bin", "spark-submit"),
           "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
           "--master", master, "--name", "rowformat-connect-test", "--driver-memory", "1g",
           "--driver-java-options", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
           "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
           "--conf", f"spark.connect.grpc.binding.port={port}",
           "--conf", "spark.driver.bindAddress=127.0.0.1",
           "--conf", "spark.driver.host=127.0.0.1",
           "--conf", "spark.ui.enabled=false",
           "--conf", "spark.sql.shuffle.partitions=2",
           "--conf", "spark.default.parallelism=2",
           "--conf", "spark.sql.session.timeZone=UTC",
           "spark-internal"]
    env = _procs.base_env(PYSPARK_PYTHON=python, SPARK_HOME=home, **(extra_env or {}))
    proc = _procs.Proc("Spark Connect server", cmd, os.path.join(workdir, "connect.log"),
                       env, workdir)
    try:
        _procs.wait_for(f"Spark Connect server on port {port}",
                        lambda: _procs.port_open(port), 180, [proc])
    except BaseException:
        proc.stop()
        raise
    return proc, f"sc://127.0.0.1:{port}"


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp("connect-server"))
    proc, url = start_connect_server(workdir, "local[2]", sys.executable)
    yield url
    proc.stop()


def test_every_helper_works_on_a_connect_session(connect_server, tmp_path):
    t = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    rc, output = _procs.run_script(os.path.join(HERE, "connect_job.py"),
                                   [connect_server, str(tmp_path)], env, str(tmp_path), 400,
                                   str(tmp_path / "client.log"))
    assert rc == 0, output[-8000:]
    got = _procs.result_line(output, "CONNECT-RESULT")
    assert got["is_connect"]
    # the check ran on the server's workers: this venv's Python (the server's PYSPARK_PYTHON)
    assert got["probe"]["python"] == sys.executable and got["probe"]["version"]
    assert got["rows"] == 6000 and got["aggregate_equal"]
    assert got["upsert_equal"] and got["upserted"] == 100
    n_ids = len(range(0, 6000, 37))
    assert got["lookup_row_ids_stage"] == [n_ids, True]
    assert got["lookup_row_ids_driver"] == [n_ids, True]
    assert got["lookup"] == [len(range(0, 1000, 9)), True]
    assert got["lookup_udf"] == [len(range(0, 1000, 9)), True]
    assert got["fory_rows"] == 6000 and got["fory_bad"] == 0
    print(f"Connect client: {time.perf_counter() - t:.1f} s, start and register "
          f"{got['start_and_register_s']} s")
