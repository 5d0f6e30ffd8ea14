"""Whether Spark's Python workers can import rowformat, checked where they run.

Spark runs its Python workers (the ones that plan and read a data source,
and run UDFs) with ``PYSPARK_PYTHON``, ``python3`` from PATH when unset. In
``local`` mode they run on this machine, started in the driver's SparkFiles
directory; on a cluster they run on every executor, where a relative
``PYSPARK_PYTHON`` (``./environment/bin/python`` of a ``spark.archives``
venv) names a file in each executor's working directory. So:

- :func:`check_workers` probes the driver's planning Python (the path
  resolved as Spark resolves it there: from the driver JVM's working
  directory, where ``./environment`` is linked to the driver's copy of a
  ``spark.archives`` archive when missing) with a subprocess, and, unless the
  master is ``local``, runs a one-task job whose Python UDF reports the
  executor's ``sys.executable``, host and rowformat version (or its import
  error), within ``ROWFORMAT_SPARK_CHECK_TIMEOUT`` seconds (default 30). On
  Spark Connect there is no driver here to probe: the job alone answers, from
  the server's workers, which the server starts with its own ``PYSPARK_PYTHON``
  in a directory of each session's own (``<SparkFiles directory>/<session
  id>``, one level below the unpacked ``spark.archives``). A failure raises
  :class:`WorkerPythonError` naming the interpreter, the host and the fix that
  fits the deployment (archives, a cluster-wide install, ``spark.pyspark.python``,
  ``../environment/bin/python`` for a Connect server).
- :class:`Shipped` is the base of every rowformat object that Spark pickles
  to a worker (readers, writers, UDFs): it is unpickled through a function
  sent by value, which imports rowformat first and, when that fails, raises
  an ImportError naming the Python the task ran and its host, where Spark's
  own unpickling would only say ``No module named 'rowformat'``.
"""
from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import uuid
import warnings
from typing import Any

from ..errors import WorkerPythonError

_PROBE = "import rowformat._rowcodec, rowformat.spark, pyarrow"
# (application, python) -> the failure, or None; "timeout" when no executor answered
_checked: dict[tuple, str | None] = {}
_DOCS = "docs/spark.md, 'Running on a cluster'"
_DOCS_CONNECT = "docs/spark.md, 'Spark Connect'"
TIMEOUT_ENV = "ROWFORMAT_SPARK_CHECK_TIMEOUT"


# ---- code that runs in Spark's Python workers, sent by value --------------
#
# Functions whose __module__ names no importable module are pickled by value
# by cloudpickle: the worker needs neither rowformat nor this module to load
# them (_SHIPPED below marks them so).

def _worker_facts() -> dict:
    import socket
    import sys as _sys
    return {"python": _sys.executable, "host": socket.gethostname(), "cwd": os.getcwd(),
            "python_version": "%d.%d.%d" % _sys.version_info[:3]}


def _shipped_pythons() -> list:
    """The ``bin/python`` of each unpacked environment (a ``spark.archives``
    archive) in this worker's working directory, or one level up when the
    worker runs in a Spark Connect session's own directory, other than the
    running interpreter's."""
    import os as _os
    import re as _re
    import sys as _sys
    here = _os.getcwd()
    dirs = [here]
    if _re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", _os.path.basename(here)):
        dirs.append(_os.path.dirname(here))
    mine = _os.path.realpath(_sys.prefix)
    found = []
    for d in dirs:
        try:
            names = sorted(_os.listdir(d))
        except OSError:
            continue
        for name in names:
            top = _os.path.join(d, name)
            if _os.path.isfile(_os.path.join(top, "bin", "python")) and \
                    _os.path.realpath(top) != mine:
                found.append(_os.path.join(top, "bin", "python"))
    return found


def _import_rowformat():
    """rowformat's version, importing what a task needs, or raises
    ImportError naming this Python and host, and the fix that fits."""
    try:
        import pyarrow  # noqa: F401
        import rowformat
        import rowformat._rowcodec  # noqa: F401
        import rowformat.spark  # noqa: F401
    except Exception as e:
        facts = _worker_facts()
        shipped = _shipped_pythons()
        if shipped:
            # an archive is here but this task did not run it: the source
            # Spark found by itself runs the driver JVM's interpreter variables
            fix = (f"This executor holds a shipped Python environment ({shipped[0]}, from "
                   f"spark.archives) that this task did not run: a paimon-row source that Spark "
                   f"found by itself (spark.read.format('paimon-row') without "
                   f"rowformat.spark.register(spark)) runs its tasks with the driver JVM's "
                   f"PYSPARK_DRIVER_PYTHON or PYSPARK_PYTHON environment variable, else python3, "
                   f"never with spark.pyspark.python or spark.pyspark.driver.python. Call "
                   f"rowformat.spark.register(spark) once after creating the session: it "
                   f"registers the source with the session's workers' Python")
        else:
            fix = (f"Ship rowformat with spark.archives (a venv-pack archive holding the "
                   f"rowformat wheel, with PYSPARK_PYTHON=./environment/bin/python), install "
                   f"the wheel into this Python on every node, or point spark.pyspark.python / "
                   f"PYSPARK_PYTHON at a Python that has it")
        raise ImportError(
            f"rowformat cannot be imported by the Python this Spark task runs: "
            f"{facts['python']} (Python {facts['python_version']}) on host {facts['host']} "
            f"(working directory {facts['cwd']}): {type(e).__name__}: {e}. {fix} "
            f"(rowformat's {_DOCS})", name="rowformat") from e
    return rowformat.__version__


def _load_shipped(module: str, qualname: str, payload: bytes):
    """Unpickles a :class:`Shipped` object in a worker: rowformat first."""
    _import_rowformat()
    import importlib
    import pickle
    cls: Any = importlib.import_module(module)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    obj = cls.__new__(cls)
    state = pickle.loads(payload)
    setstate = getattr(obj, "__setstate__", None)
    if setstate is not None:
        setstate(state)
    elif state:
        obj.__dict__.update(state)
    return obj


def _probe_task(_):
    """The check's one task: what this worker runs, as JSON."""
    import json as _json
    facts = _worker_facts()
    try:
        facts["version"] = _import_rowformat()
    except ImportError as e:
        facts["error"] = str(e.__cause__ or e)
        facts["error_type"] = type(e.__cause__ or e).__name__
    return _json.dumps(facts)


_SHIPPED = "rowformat_spark_shipped"     # a module name nothing imports: by value
for _f in (_worker_facts, _shipped_pythons, _import_rowformat, _load_shipped, _probe_task):
    _f.__module__ = _SHIPPED


class Shipped:
    """Base of the objects Spark pickles to its Python workers: they are
    rebuilt by :func:`_load_shipped`, which names the worker's Python and
    host when rowformat does not import there. The object's own state
    (``__getstate__``/``__setstate__`` as usual) travels as pickled bytes
    inside, so nothing of rowformat is unpickled before that check."""

    __slots__ = ()

    def __reduce__(self):
        from pyspark import cloudpickle
        state = self.__getstate__() if hasattr(self, "__getstate__") else self.__dict__
        cls = type(self)
        return (_load_shipped, (cls.__module__, cls.__qualname__, cloudpickle.dumps(state)))


# ---- the driver side --------------------------------------------------------

def is_connect(spark) -> bool:
    """Whether ``spark`` is a Spark Connect session (no sparkContext)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _conf(spark, name: str, default=None):
    try:
        return spark.conf.get(name, default)
    except Exception:     # a stand-in session, or a conf Connect refuses to read
        return default


def _application(spark):
    if is_connect(spark):
        return ("connect", _conf(spark, "spark.app.id"), getattr(spark, "session_id", None))
    sc = spark.sparkContext
    return ("classic", getattr(sc, "applicationId", None))


def _master(spark) -> str:
    if is_connect(spark):
        return _conf(spark, "spark.master", "") or ""
    return getattr(spark.sparkContext, "master", None) or _conf(spark, "spark.master", "") or ""


def _is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def _spark_files_root(spark) -> str | None:
    try:
        from pyspark import SparkFiles
        if getattr(SparkFiles, "_sc", None) is not None:
            return SparkFiles.getRootDirectory()
    except Exception:
        pass
    return None


def _jvm_cwd(spark) -> str:
    """The driver JVM's working directory: where Spark starts the Python
    workers that plan a data source (they carry no job artifact directory)."""
    try:
        return str(spark.sparkContext._jvm.System.getProperty("user.dir"))
    except Exception:
        return os.getcwd()


def driver_python(python: str, cwd: str | None) -> str:
    """``python`` as Spark's driver starts its planning workers: a bare
    name from PATH, a relative path from the JVM's working directory ``cwd``."""
    if os.sep not in python:
        return shutil.which(python) or python
    if not os.path.isabs(python) and cwd:
        return os.path.normpath(os.path.join(cwd, python))
    return python


# Spark's temporary directories: <local dir>/spark-<uuid>/userFiles-<uuid>
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# links this process made: link -> its target, removed when the process exits
_links: dict[str, str] = {}
_links_lock = threading.Lock()


def _own_link_target(target: str, root: str, top: str) -> bool:
    """Whether ``target`` is exactly what :func:`link_driver_archive` links
    ``./top`` to, for some application whose SparkFiles directory was in the
    same local directory as ``root``: ``<local dir>/spark-<uuid>/userFiles-<uuid>/top``."""
    local = os.path.dirname(os.path.dirname(os.path.normpath(root)))
    pattern = re.escape(local + os.sep) + f"spark-{_UUID}" + re.escape(os.sep) + \
        f"userFiles-{_UUID}" + re.escape(os.sep + top)
    return re.fullmatch(pattern, target) is not None


def _remove_links() -> None:
    """At exit: removes the links this process made that still point where
    it made them (Spark deletes their targets as the application stops)."""
    with _links_lock:
        for link, target in list(_links.items()):
            try:
                if os.readlink(link) == target:
                    os.remove(link)
            except OSError:
                pass
            _links.pop(link, None)


def link_driver_archive(python: str, cwd: str, root: str | None) -> str | None:
    """For a relative ``python`` inside an archive (``./environment/bin/python``
    with ``spark.archives=env.tar.gz#environment``): Spark extracts the archive
    for the driver in its SparkFiles directory ``root``, but starts the
    planning workers in the JVM's working directory ``cwd``. Links
    ``cwd/environment`` to Spark's copy when it is missing, or when it is a
    link of exactly the shape this function makes (into another
    application's SparkFiles directory, see :func:`_own_link_target`) that
    dangles now; never touches anything else there. The link is removed when
    this process exits. The link made, or None."""
    parts = os.path.normpath(python).split(os.sep)
    if os.path.isabs(python) or len(parts) < 2 or parts[0] in ("", os.curdir, os.pardir) \
            or not root or not os.path.exists(os.path.join(root, python)):
        return None
    link, target = os.path.join(cwd, parts[0]), os.path.join(root, parts[0])
    if os.path.lexists(link):
        ours = os.path.islink(link) and _own_link_target(os.readlink(link), root, parts[0])
        if not ours or os.path.exists(link):
            return None              # the user's own, or a live link of ours
        try:
            os.remove(link)
        except OSError:
            return None
    try:
        os.symlink(target, link)
    except OSError:
        return None
    with _links_lock:
        if not _links:
            atexit.register(_remove_links)
        _links[link] = target
    return link


def _probe(python: str) -> str | None:
    """None when ``python`` imports rowformat, else why not."""
    try:
        done = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True,
                              timeout=120, env=os.environ.copy())
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"it does not run: {e}"
    if done.returncode == 0:
        return None
    lines = done.stderr.strip().splitlines()
    return lines[-1] if lines else f"it exited with status {done.returncode}"


def _timeout() -> float:
    try:
        return float(os.environ.get(TIMEOUT_ENV, "30"))
    except ValueError:
        return 30.0


def probe_executors(spark, timeout: float | None = None) -> dict | None:
    """What a one-task job's Python worker runs (``python``, ``host``,
    ``cwd``, ``python_version``, and ``version`` or ``error``), or None
    when no executor ran it within ``timeout`` seconds (the job is then
    cancelled). A task that could not start its Python at all gives
    ``{"error": Spark's message, "spark_failed": True}``."""
    from pyspark.sql.functions import udf
    timeout = _timeout() if timeout is None else timeout
    probe = udf(_probe_task, "string", useArrow=False)
    df = spark.range(0, 1, 1, 1).select(probe("id").alias("r"))
    tag = f"rowformat-worker-check-{uuid.uuid4().hex[:12]}"
    out: dict = {}

    def run():
        try:
            spark.addTag(tag)
            try:
                out["rows"] = df.collect()
            finally:
                spark.removeTag(tag)
        except BaseException as e:     # noqa: BLE001 - reported by the caller
            out["error"] = e

    thread = threading.Thread(target=run, name="rowformat-worker-check", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        try:
            spark.interruptTag(tag)
        except Exception:
            pass
        thread.join(10)
        return None
    if "error" in out:
        text = str(out["error"]).strip()
        return {"error": text, "spark_failed": True}
    return json.loads(out["rows"][0][0])


def _connect_advice() -> str:
    return ("The Spark Connect server starts these workers, with its own PYSPARK_PYTHON "
            "environment variable (else python3; it does not read spark.pyspark.python), in a "
            "directory of each session's own: start the server with PYSPARK_PYTHON set to the "
            "absolute path of a Python that has rowformat on every node, or with "
            "spark.archives=<venv-pack archive>#environment and "
            f"PYSPARK_PYTHON=../environment/bin/python ({_DOCS_CONNECT})")


def _advice(spark, python: str | None, master: str, where: str) -> str:
    archives = _conf(spark, "spark.archives")
    if is_connect(spark):
        return _connect_advice()
    if python and not os.path.isabs(python) and os.sep in python:
        top = os.path.normpath(python).split(os.sep)[0]
        return (f"PYSPARK_PYTHON={python} names a file inside each worker's working "
                f"directory, which Spark fills from spark.archives (now "
                f"{archives or 'unset'}): ship a venv-pack archive holding the rowformat "
                f"wheel as spark.archives=env.tar.gz#{top}. Spark extracts it on the "
                f"executors and in the driver's SparkFiles directory, and register() links "
                f"./{top} in the driver's working directory to that copy (where Spark starts "
                f"the planning workers); without spark.archives, extract the archive into "
                f"./{top} there yourself ({_DOCS})")
    if _is_local(master) and where == "driver":
        return (f"Point PYSPARK_PYTHON at this Python before the SparkSession starts: "
                f"os.environ['PYSPARK_PYTHON'] = sys.executable (here {sys.executable!r}), or "
                f"export PYSPARK_PYTHON={sys.executable}, or set spark.pyspark.python with "
                f"spark-submit; or activate the virtualenv")
    return (f"Install the rowformat wheel into {python or 'that Python'} on every node "
            f"(a cluster-wide install or the image), or ship a packed venv: "
            f"spark.archives=env.tar.gz#environment with PYSPARK_PYTHON=./environment/bin/python "
            f"set before the session starts; or point spark.pyspark.python / PYSPARK_PYTHON "
            f"at a Python that has rowformat on every node ({_DOCS})")


def _ignored_conf(spark, python: str | None) -> str:
    """A note when the session's ``spark.pyspark.python`` is not the Python
    its workers run: PySpark takes the workers' Python from the
    ``PYSPARK_PYTHON`` variable of this process (else python3), which only
    spark-submit sets from the conf; a builder's conf never reaches it."""
    conf = None if is_connect(spark) else _conf(spark, "spark.pyspark.python")
    if not conf or conf == python:
        return ""
    return (f" The session's spark.pyspark.python is {conf}, but its workers run {python}: "
            f"PySpark takes their Python from this process's PYSPARK_PYTHON environment "
            f"variable (else python3), which spark-submit sets from --conf "
            f"spark.pyspark.python and a builder's .config() does not; set "
            f"PYSPARK_PYTHON={conf} before the session starts.")


# Spark's error when it cannot start a worker's Python (Java's IOException)
_CANNOT_RUN = re.compile(r'Cannot run program "([^"]*)"(?: \(in directory "([^"]*)"\))?')


def _session_directory_failure(program: str | None, directory: str | None) -> str | None:
    """The cause, when Spark could not start a relative ``program`` in a
    Spark Connect session's own directory (``<SparkFiles directory>/<session
    id>``, where Spark Connect starts each session's Python workers; the
    SparkFiles directory is the executor's working directory on a cluster,
    where spark.archives are unpacked)."""
    if not program or not directory or os.path.isabs(program) or os.sep not in program:
        return None
    if not re.fullmatch(_UUID, os.path.basename(os.path.normpath(directory))):
        return None
    parts = os.path.normpath(program).split(os.sep)
    if parts[0] == os.pardir:
        return None
    fixed = os.path.join(os.pardir, *parts)
    return (f"Spark could not start the workers' Python {program!r} in {directory}: Spark "
            f"Connect starts each session's Python workers in a directory of that session's "
            f"own (its id, under the executor's working directory; under the SparkFiles "
            f"directory on the driver and in local mode), so a relative PYSPARK_PYTHON "
            f"resolves from there, one level below the ./{parts[0]} that spark.archives "
            f"unpacks. Start the Connect server with PYSPARK_PYTHON={fixed} (with "
            f"spark.archives=<venv-pack archive>#{parts[0]}), or with PYSPARK_PYTHON set to "
            f"the absolute path of a Python that has rowformat on every node "
            f"({_DOCS_CONNECT})")


def _executor_failure(spark, python, master, report: dict) -> str:
    if report.get("spark_failed"):
        lines = [ln for ln in report["error"].splitlines() if ln.strip()]
        gist = next((ln for ln in lines if "Cannot run program" in ln or "Error" in ln),
                    lines[0] if lines else "the task failed")
        found = _CANNOT_RUN.search(report["error"])
        program, directory = found.groups() if found else (None, None)
        session = _session_directory_failure(program, directory)
        if session is not None:
            return session
        python = python or program        # Connect: the server's, known only from Spark
        which = f"the workers' Python {python!r}" if python else "the workers' Python"
        return (f"Spark's check task on the executors failed before rowformat could report "
                f"({which} may not start there): {gist.strip()}. "
                + _advice(spark, python, master, "executors") + _ignored_conf(spark, python))
    return (f"Spark's Python workers on the executors cannot import rowformat: the check "
            f"task ran {report['python']} (Python {report.get('python_version')}) on host "
            f"{report.get('host')} (working directory {report.get('cwd')}): "
            f"{report.get('error_type', 'error')}: {report['error']}. "
            + _advice(spark, python, master, "executors") + _ignored_conf(spark, python))


def check_workers(spark) -> None:
    """Raises WorkerPythonError unless ``spark``'s worker Python imports
    rowformat where it runs (once per application and interpreter)."""
    connect = is_connect(spark)
    python = None if connect else spark.sparkContext.pythonExec
    key = (_application(spark), python)
    if key not in _checked:
        _checked[key] = _check(spark, python, connect)
    failure = _checked[key]
    if failure is not None and failure != "timeout":
        raise WorkerPythonError(failure)


def _check(spark, python: str | None, connect: bool) -> str | None:
    master = _master(spark)
    if not connect and python is not None:
        cwd = _jvm_cwd(spark)
        link_driver_archive(python, cwd, _spark_files_root(spark))
        resolved = driver_python(python, cwd)
        if resolved != sys.executable:
            failure = _probe(resolved)
            if failure is not None:
                shown = python if resolved == python else f"{python!r}, here {resolved!r},"
                return (f"Spark runs its Python workers with {shown} "
                        f"(spark.sparkContext.pythonExec), which on the driver (where Spark "
                        f"plans the paimon-row source) cannot import rowformat ({failure}), so "
                        f"the source and rowformat's UDFs would fail in the workers "
                        f"(DATA_SOURCE_NOT_FOUND, ModuleNotFoundError). "
                        + _advice(spark, python, master, "driver")
                        + _ignored_conf(spark, python))
    if not connect and _is_local(master):
        return None          # local mode: the executors are this JVM, their Python the above
    report = probe_executors(spark)
    if report is None:
        warnings.warn(f"rowformat.spark: no executor ran the worker check within "
                      f"{_timeout():g} s ({TIMEOUT_ENV}); it was cancelled and is not "
                      f"retried in this application", RuntimeWarning, stacklevel=4)
        return "timeout"
    if "error" in report:
        return _executor_failure(spark, python, master, report)
    return None


def automatic_source_python() -> None:
    """Called by the automatically found source (``pyspark_rowformat``) in
    its planning worker: refuses to go on when Spark started that worker,
    and so would start the source's tasks, with the driver's Python rather
    than the workers' one.

    Spark's lookup of ``pyspark_*`` modules registers the sources it finds
    with the driver JVM's ``PYSPARK_DRIVER_PYTHON`` (else its
    ``PYSPARK_PYTHON``, else ``python3``) as their interpreter, on every
    executor too; a session's workers run ``PYSPARK_PYTHON``. When both are
    set and differ (PySpark's archive recipe sets both), the source's tasks
    would run the driver's interpreter path on the executors: missing there
    (``Cannot run program``), or, where it exists, bypassing the shipped
    environment. ``rowformat.spark.register(spark)`` registers the source
    with the session's workers' Python instead."""
    driver = os.environ.get("PYSPARK_DRIVER_PYTHON")
    workers = os.environ.get("PYSPARK_PYTHON")
    if not driver or not workers:
        return
    here = os.getcwd()
    if os.path.abspath(driver_python(driver, here)) == \
            os.path.abspath(driver_python(workers, here)):
        return
    raise WorkerPythonError(
        f"paimon-row was found by Spark's automatic lookup of pyspark_* modules, which runs "
        f"the source's tasks with the driver's Python (PYSPARK_DRIVER_PYTHON={driver}), "
        f"not the workers' (PYSPARK_PYTHON={workers}): on a cluster its tasks would fail "
        f"or bypass the workers' environment. Call rowformat.spark.register(spark) once "
        f"after creating the session: it registers the source with the workers' Python "
        f"({_DOCS})")


def check_active(session=None) -> None:
    """check_workers on ``session`` or the active session, if any."""
    if session is None:
        from pyspark.sql import SparkSession
        session = SparkSession.getActiveSession()
    if session is not None:
        check_workers(session)
