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


def test_the_drivers_copy_of_the_archive_is_linked_where_planning_runs(tmp_path):
    root, cwd = tmp_path / "spark-1" / "userFiles-2", tmp_path / "cwd"
    (root / "environment" / "bin").mkdir(parents=True)
    (root / "environment" / "bin" / "python").write_text("")
    cwd.mkdir()
    python = "./environment/bin/python"
    link = preflight.link_driver_archive(python, str(cwd), str(root))
    assert link == str(cwd / "environment") and (cwd / python).exists()
    assert preflight.link_driver_archive(python, str(cwd), str(root)) is None   # there already
    # a link of an earlier application, dangling now, is replaced; anything else is kept
    os.remove(link)
    os.symlink(tmp_path / "spark-0" / "userFiles-9" / "environment", link)
    assert preflight.link_driver_archive(python, str(cwd), str(root)) == link
    assert os.readlink(link) == str(root / "environment")
    os.remove(link)
    (cwd / "environment").mkdir()
    assert preflight.link_driver_archive(python, str(cwd), str(root)) is None
    assert preflight.link_driver_archive("/abs/bin/python", str(cwd), str(root)) is None


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
