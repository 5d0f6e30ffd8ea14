"""The driver says so, in one clear error, when Spark's Python workers
cannot import rowformat, and a task says which Python it ran (no Spark
session needed: stand-ins name the workers' Python; the checks on real
executors are in test_cluster.py and test_connect.py)."""
import json
import os
import pickle
import stat
import subprocess
import sys
import types

import pytest

import rowformat.spark
from rowformat.errors import WorkerPythonError
from rowformat.spark import preflight


def _session(python, master="local[2]"):
    return types.SimpleNamespace(sparkContext=types.SimpleNamespace(
        pythonExec=python, master=master, applicationId="app-test"))


def _blocked_python(tmp_path):
    """This venv's Python, but rowformat does not import in it (as on a
    worker without the wheel): pyspark and pyarrow still do."""
    blocker = tmp_path / "blocker"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['rowformat'] = None\n")
    wrapper = tmp_path / "python-without-rowformat"
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH={blocker} exec {sys.executable} \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


def test_a_worker_python_without_rowformat_is_named_with_the_fix(tmp_path, monkeypatch):
    # a real Python that cannot see this venv's packages (-I -S: no site-packages)
    bare = tmp_path / "python3"
    bare.write_text(f"#!/bin/sh\nexec {sys.executable} -I -S \"$@\"\n")
    bare.chmod(bare.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(preflight, "_checked", {})
    with pytest.raises(WorkerPythonError) as e:
        rowformat.spark.check_workers(_session(str(bare)))
    text = str(e.value)
    assert str(bare) in text and "ModuleNotFoundError" in text
    assert "PYSPARK_PYTHON" in text and sys.executable in text
    with pytest.raises(WorkerPythonError, match="does not run"):
        preflight.check_workers(_session(os.fspath(tmp_path / "no-such-python")))
    # this Python, or another path to a Python that has rowformat, passes
    preflight.check_workers(_session(sys.executable))
    wrapper = tmp_path / "venv-python"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    preflight.check_workers(_session(str(wrapper)))
    assert preflight._checked[(("classic", "app-test"), str(wrapper))] is None   # once


def test_relative_worker_pythons_resolve_where_spark_starts_them(tmp_path):
    # ./environment/bin/python (spark.archives) from the driver JVM's working directory
    assert preflight.driver_python("./environment/bin/python", str(tmp_path)) == \
        str(tmp_path / "environment" / "bin" / "python")
    assert preflight.driver_python("/abs/python", str(tmp_path)) == "/abs/python"
    assert preflight.driver_python("sh", None) == subprocess.run(
        ["sh", "-c", "command -v sh"], capture_output=True, text=True).stdout.strip()


def _spark_files_dir(local, n):
    """A SparkFiles directory as Spark names it: <local>/spark-<uuid>/userFiles-<uuid>."""
    return local / f"spark-{n:08d}-0000-4000-8000-{n:012d}" / \
        f"userFiles-{n:08d}-1111-4111-8111-{n:012d}"


def test_the_drivers_copy_of_the_archive_is_linked_where_planning_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(preflight, "_links", {})
    root, cwd = _spark_files_dir(tmp_path, 2), tmp_path / "cwd"
    (root / "environment" / "bin").mkdir(parents=True)
    (root / "environment" / "bin" / "python").write_text("")
    cwd.mkdir()
    python = "./environment/bin/python"
    link = preflight.link_driver_archive(python, str(cwd), str(root))
    assert link == str(cwd / "environment") and (cwd / python).exists()
    assert preflight.link_driver_archive(python, str(cwd), str(root)) is None   # there already
    # a link of an earlier application, dangling now, is replaced; anything else is kept
    os.remove(link)
    os.symlink(_spark_files_dir(tmp_path, 1) / "environment", link)
    assert preflight.link_driver_archive(python, str(cwd), str(root)) == link
    assert os.readlink(link) == str(root / "environment")
    os.remove(link)
    (cwd / "environment").mkdir()
    assert preflight.link_driver_archive(python, str(cwd), str(root)) is None
    assert preflight.link_driver_archive("/abs/bin/python", str(cwd), str(root)) is None


def test_a_users_dangling_link_is_left_alone_even_into_a_userfiles_directory(tmp_path):
    root, cwd = _spark_files_dir(tmp_path, 2), tmp_path / "cwd"
    (root / "environment" / "bin").mkdir(parents=True)
    (root / "environment" / "bin" / "python").write_text("")
    cwd.mkdir()
    link = cwd / "environment"
    # not the shape register() makes: each is the user's, and stays as it is
    for target in (tmp_path / "backups" / "userFiles-old" / "environment",
                   _spark_files_dir(tmp_path, 1) / "environment" / "bin",
                   _spark_files_dir(tmp_path, 1) / "other-name",
                   _spark_files_dir(tmp_path / "elsewhere", 1) / "environment",
                   tmp_path / "spark-x" / "userFiles-y" / "environment"):
        os.symlink(target, link)
        assert preflight.link_driver_archive("./environment/bin/python", str(cwd),
                                             str(root)) is None
        assert os.readlink(link) == str(target)
        os.remove(link)


def test_the_link_register_made_is_removed_when_the_driver_exits(tmp_path):
    root, cwd = _spark_files_dir(tmp_path, 2), tmp_path / "cwd"
    (root / "environment" / "bin").mkdir(parents=True)
    (root / "environment" / "bin" / "python").write_text("")
    cwd.mkdir()
    code = ("import sys; from rowformat.spark import preflight; "
            "print(preflight.link_driver_archive('./environment/bin/python', sys.argv[1], "
            "sys.argv[2]))")
    done = subprocess.run([sys.executable, "-c", code, str(cwd), str(root)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(cwd / "environment")      # made, then removed at exit
    assert not os.path.lexists(cwd / "environment")
    # a link put in its place by someone else is not removed
    code += "; import os; os.remove(sys.argv[1] + '/environment'); " \
        "os.symlink(sys.argv[2], sys.argv[1] + '/environment')"
    done = subprocess.run([sys.executable, "-c", code, str(cwd), str(root)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert os.readlink(cwd / "environment") == str(root)


def test_the_archive_advice_names_spark_archives(tmp_path, monkeypatch):
    monkeypatch.setattr(preflight, "_checked", {})
    session = _session("./environment/bin/python", master="spark://127.0.0.1:7077")
    session.conf = types.SimpleNamespace(get=lambda k, d=None: {
        "spark.archives": "env.tar.gz#environment"}.get(k, d))
    with pytest.raises(WorkerPythonError) as e:
        preflight.check_workers(session)     # not extracted on this driver
    text = str(e.value)
    assert "./environment/bin/python" in text and "spark.archives" in text
    assert "env.tar.gz#environment" in text and "venv-pack" in text


def test_a_task_without_rowformat_says_which_python_and_host_it_ran(tmp_path):
    from pyspark import cloudpickle
    from rowformat.spark.fory_columns import ToFory
    python = _blocked_python(tmp_path)
    shipped = cloudpickle.dumps(ToFory(None, "standard"))
    assert pickle.loads(shipped).layout == "standard"        # here: as it was
    done = subprocess.run([python, "-c", "import pickle, sys; "
                           "pickle.loads(sys.stdin.buffer.read())"],
                          input=shipped, capture_output=True, timeout=60)
    err = done.stderr.decode()
    assert done.returncode != 0
    # (the wrapper execs this venv's Python, which is what the task then runs)
    assert "rowformat cannot be imported by the Python this Spark task runs: " \
        f"{sys.executable}" in err
    assert "on host" in err and "spark.archives" in err


def test_the_check_task_reports_the_worker(tmp_path):
    from pyspark import cloudpickle
    probe = cloudpickle.dumps(preflight._probe_task)
    code = "import pickle, sys; print(pickle.loads(sys.stdin.buffer.read())(0))"
    for python, ok in ((sys.executable, True), (_blocked_python(tmp_path), False)):
        done = subprocess.run([python, "-c", code], input=probe, capture_output=True,
                              timeout=60, cwd=tmp_path)
        report = json.loads(done.stdout)
        assert report["python"] == sys.executable        # (both wrappers exec it)
        assert report["cwd"] == str(tmp_path) and report["host"]
        if ok:
            assert report["version"] == rowformat.__version__
        else:
            assert "rowformat" in report["error"] and "version" not in report
            text = preflight._executor_failure(
                _session("./environment/bin/python", "spark://h:7077"),
                "./environment/bin/python", "spark://h:7077", report)
            assert report["host"] in text and sys.executable in text
            assert "spark.archives" in text


def test_the_automatic_source_refuses_the_drivers_python(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
    monkeypatch.setenv("PYSPARK_PYTHON", "./environment/bin/python")
    with pytest.raises(WorkerPythonError, match=r"register\(spark\)"):
        preflight.automatic_source_python()
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)      # the same Python: fine
    preflight.automatic_source_python()
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON")
    monkeypatch.setenv("PYSPARK_PYTHON", "./environment/bin/python")
    preflight.automatic_source_python()                         # no driver Python set


def test_a_task_beside_a_shipped_environment_it_did_not_run_says_to_call_register(tmp_path):
    # the executor unpacked spark.archives (./environment), but the task ran another
    # Python: a source Spark found by itself runs the driver JVM's PYSPARK_* variables
    from pyspark import cloudpickle
    from rowformat.spark.fory_columns import ToFory
    (tmp_path / "environment" / "bin").mkdir(parents=True)
    os.symlink(sys.executable, tmp_path / "environment" / "bin" / "python")
    shipped = cloudpickle.dumps(ToFory(None, "standard"))
    code = "import pickle, sys; pickle.loads(sys.stdin.buffer.read())"
    for cwd in (tmp_path, tmp_path / "0b5e3c4a-3f0e-4c55-9a1e-2f0d8e6b7c11"):   # a session's
        cwd.mkdir(exist_ok=True)
        done = subprocess.run([_blocked_python(tmp_path), "-c", code], input=shipped,
                              capture_output=True, timeout=60, cwd=cwd)
        err = done.stderr.decode()
        assert done.returncode != 0
        assert str(tmp_path / "environment" / "bin" / "python") in err
        assert "call rowformat.spark.register(spark)" in err.replace("Call", "call")
        assert "spark.pyspark.python" in err and "Ship rowformat" not in err


def test_a_spark_pyspark_python_the_workers_do_not_run_is_named(tmp_path, monkeypatch):
    # python app.py with .config("spark.pyspark.python", ...): PySpark's workers run
    # PYSPARK_PYTHON (else python3), not the conf
    monkeypatch.setattr(preflight, "_checked", {})
    python = _blocked_python(tmp_path)
    session = _session(python)
    session.conf = types.SimpleNamespace(get=lambda k, d=None: {
        "spark.pyspark.python": "/opt/env/bin/python"}.get(k, d))
    with pytest.raises(WorkerPythonError) as e:
        preflight.check_workers(session)
    text = str(e.value)
    assert "spark.pyspark.python is /opt/env/bin/python" in text and python in text
    assert "PYSPARK_PYTHON=/opt/env/bin/python before the session starts" in text


# Spark 4.3's error on a Connect server started with spark.archives and
# PYSPARK_PYTHON=./environment/bin/python (local[2]: the driver's SparkFiles directory)
CONNECT_FAILURE = (
    'Job aborted due to stage failure: Task 0 in stage 1.0 failed 1 times, most recent '
    'failure: Lost task 0.0 in stage 1.0 (TID 2) (localhost executor driver): '
    'java.io.IOException: Cannot run program "./environment/bin/python" (in directory '
    '"/tmp/spark-78232624-4436-47ec-8ba5-e15e562538ff/userFiles-660d6675-9407-4c96-83cb-'
    '0cf231d13f25/23c41543-88ef-49b9-8d9b-f90b66fc36e8"): error=2, No such file or directory')


def test_a_connect_servers_relative_python_names_the_session_directory_and_the_fix():
    # a stand-in of a Connect session: its class's module is pyspark.sql.connect's
    session = type("SparkSession", (), {"__module__": "pyspark.sql.connect.session"})
    connect = session()
    connect.conf = types.SimpleNamespace(get=lambda k, d=None: d)
    assert preflight.is_connect(connect)
    text = preflight._executor_failure(connect, None, "local[2]",
                                       {"error": CONNECT_FAILURE, "spark_failed": True})
    assert "None" not in text
    assert "'./environment/bin/python'" in text and "23c41543-88ef" in text
    assert "each session's Python workers in a directory of that session's own" in text
    assert "PYSPARK_PYTHON=../environment/bin/python" in text
    # any other failure to start it names the program Spark reports, and the server's fix
    other = CONNECT_FAILURE.split(" (in directory")[0].replace("./environment", "/opt/env") + \
        ": error=2, No such file or directory"
    text = preflight._executor_failure(connect, None, "local[2]",
                                       {"error": other, "spark_failed": True})
    assert "None" not in text and "'/opt/env/bin/python'" in text
    assert "does not read spark.pyspark.python" in text
    assert "PYSPARK_PYTHON=../environment/bin/python" in text


def test_the_replaced_source_notice_stays_out_of_the_drivers_log(tmp_path):
    """Spark WARNs "The data source paimon-row replaced a statically registered
    data source." on register() and again at every cache() (each copies the
    session's sources); at Spark's own log level (no setLogLevel), a job that
    registers twice and caches prints neither, while such a notice about
    another source still prints."""
    script = tmp_path / "job.py"
    script.write_text(f"""
import os, sys
os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource
import rowformat.spark
builder = SparkSession.builder.master("local[1]")
for k, v in {FAST_CONF_FOR_JOB!r}.items():
    builder = builder.config(k, v)
spark = builder.getOrCreate()
rowformat.spark.register(spark)
rowformat.spark.register(spark)
path = {str(tmp_path / "t")!r}
spark.range(10).write.format("paimon-row").mode("overwrite").save(path)
print("rows", spark.read.format("paimon-row").load(path).cache().count(), flush=True)
class Other(DataSource):
    @classmethod
    def name(cls):
        return "other-source"
spark.dataSource.register(Other)
spark.dataSource.register(Other)
spark.range(3).cache().count()
spark.stop()
""")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 0 and "rows 10" in out, out[-4000:]
    assert "The data source other-source replaced a previously registered" in out
    assert "paimon-row replaced" not in out, out[-4000:]


FAST_CONF_FOR_JOB = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                     "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
                     "spark.sql.shuffle.partitions": "1",
                     "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
