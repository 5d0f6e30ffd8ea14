"""rowformat.spark on Spark Connect: a real Connect server started from
pyspark's own jars on 127.0.0.1 (one for this module, stopped by its PID),
and a client script in a process of its own (a Connect client and this
suite's classic session cannot share one Python process).

Where test_cluster.py's cluster can run (root, unshare, venv-pack), the
server runs docs/spark.md's Spark Connect recipe on it: its master is that
cluster, whose workers cannot see this venv, and rowformat reaches them as
the checkout's wheel in a venv-pack archive (``spark.archives``) with
``PYSPARK_PYTHON=../environment/bin/python`` (Spark Connect starts each
session's Python workers in a directory of the session's own, one level
below the unpacked archive). Elsewhere it runs ``local[2]`` with this venv's
Python, and the recipe's own test skips."""
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
# the recipe's PYSPARK_PYTHON: from a session's directory, the archive unpacked one level up
RECIPE_PYTHON = "../environment/bin/python"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def start_connect_server(workdir: str, master: str, python: str, extra_env=None, conf=None):
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
           "--conf", "spark.sql.session.timeZone=UTC"]
    for k, v in (conf or {}).items():
        cmd += ["--conf", f"{k}={v}"]
    cmd.append("spark-internal")
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


class Server:
    def __init__(self, url: str, cluster=None):
        self.url, self.cluster = url, cluster


@pytest.fixture(scope="module")
def connect_server(request, tmp_path_factory):
    """The module's Connect server: on test_cluster.py's cluster with the
    archive recipe when that cluster can run, else local[2] with this venv's
    Python. Module-scoped: its application holds the cluster's two cores,
    which test_cluster.py's applications need once this module is done."""
    from .test_cluster import FAST_JVM, _why_not
    workdir = str(tmp_path_factory.mktemp("connect-server"))
    cluster = None if _why_not() else request.getfixturevalue("cluster")
    if cluster is None:
        proc, url = start_connect_server(workdir, "local[2]", sys.executable)
    else:
        proc, url = start_connect_server(workdir, cluster.master, RECIPE_PYTHON, conf={
            "spark.archives": f"{cluster.archive}#environment",
            "spark.executor.memory": "1g", "spark.executor.cores": "1",
            "spark.cores.max": "2", "spark.executor.extraJavaOptions": FAST_JVM})
    yield Server(url, cluster)
    proc.stop()


def run_client(server: Server, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    rc, output = _procs.run_script(os.path.join(HERE, "connect_job.py"),
                                   [server.url, str(tmp_path)], env, str(tmp_path), 600,
                                   str(tmp_path / "client.log"))
    assert rc == 0, output[-8000:]
    return _procs.result_line(output, "CONNECT-RESULT")


def test_every_helper_works_on_a_connect_session(connect_server, tmp_path):
    t = time.perf_counter()
    got = run_client(connect_server, tmp_path)
    assert got["is_connect"]
    probe, udf = got["probe"], got["plain_udf"]
    assert probe["version"]
    if connect_server.cluster is None:
        # the check ran on the server's workers: this venv's Python (its PYSPARK_PYTHON)
        assert probe["python"] == udf["python"] == sys.executable
    else:
        # docs/spark.md's recipe on workers that cannot see this venv: a plain Python
        # UDF and the check ran the archive's Python, from a session's own directory
        # under an executor's working directory, ../environment resolving beside it
        import re
        import rowformat
        work = re.escape(connect_server.cluster.tmp) + r"/worker-\d/app-[^/]+/\d+"
        assert re.fullmatch(f"{work}/{UUID}", udf["cwd"]), udf
        for ran in (probe, udf):        # each on whichever executor took its task
            assert re.fullmatch(f"{work}/environment/bin/python",
                                os.path.normpath(ran["python"])), ran
        assert udf["prefix"] == os.path.normpath(os.path.join(udf["cwd"], "..", "environment"))
        assert probe["version"] == rowformat.__version__ and udf["venv_hidden"], (probe, udf)
    assert got["rows"] == 6000 and got["aggregate_equal"]
    assert got["pushdown_conf"] is None          # Spark 4.3: register() leaves it off
    assert got["pushdown"] == {"id = 4242": [1, True], "_ROW_ID IN (5, 4000, 5999)": [3, True],
                               "user LIKE 'u59%' AND id > 5990": [9, True]}
    assert got["upsert_equal"] and got["upserted"] == 100
    assert got["compacted"] == [2, 2, True]     # one file a bucket, the same rows
    n_ids = len(range(0, 6000, 37))
    assert got["lookup_row_ids_stage"] == [n_ids, True]
    assert got["lookup_row_ids_driver"] == [n_ids, True]
    assert got["lookup"] == [len(range(0, 1000, 9)), True]
    assert got["lookup_udf"] == [len(range(0, 1000, 9)), True]
    assert got["fory_rows"] == 6000 and got["fory_bad"] == 0
    print(f"Connect client ({'cluster' if connect_server.cluster else 'local[2]'}): "
          f"{time.perf_counter() - t:.1f} s, start and register {got['start_and_register_s']} s")
