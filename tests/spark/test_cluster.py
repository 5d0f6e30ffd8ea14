"""rowformat on a real standalone Spark cluster (issue 36, item 5): a
master and two workers on 127.0.0.1 from pyspark's own jars, each worker in
a mount namespace where the driver's virtualenv is an empty directory (as
on another node), and rowformat shipped as docs/spark.md's archive recipe
ships it: the wheel built from this checkout, installed into a fresh venv,
packed with venv-pack and sent with ``spark.archives``. One cluster for the
test session; every process started here is stopped by its PID.

Needs root (unshare and mount for the hidden venv), a virtualenv as this
Python (the thing to hide), and venv-pack (bash run.sh setup installs it)."""
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest

import rowformat

from . import _procs

pytestmark = [pytest.mark.cluster, pytest.mark.source_tree]   # builds the checkout's wheel

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEMO = os.path.join(ROOT, "docs", "examples", "spark_pipeline.py")
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "hiding the driver's venv from the workers needs root (unshare, mount)"
    if shutil.which("unshare") is None:
        return "no unshare command"
    if sys.prefix == sys.base_prefix:
        return "this Python is not a virtualenv: there is no driver venv to hide"
    if shutil.which("venv-pack", path=os.path.dirname(sys.executable)) is None:
        return "venv-pack is not installed (bash run.sh setup installs it)"
    if not os.path.exists(os.path.join(ROOT, "pyproject.toml")):
        return "needs the checkout (the wheel is built from it)"
    return None


def build_archive(tmp: str, log) -> str:
    """The wheel of this checkout in a fresh venv, packed: the archive's path.

    pyspark's jars (460 MB) are left out, as docs/spark.md's recipe leaves
    them out (``--exclude``): the cluster's JVMs have their own, and the
    executors' Python workers need only pyspark's Python code.
    gzip level 1 (12 s for 620 MB): not a plain .tar, which Spark unpacks
    with Java code that refuses venv-pack's ``bin/python`` symlink to the
    interpreter ("would create entry outside of ..."); .tar.gz goes through
    the tar command."""
    def run(cmd, **kw):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT,
                       stdin=subprocess.DEVNULL, timeout=600, **kw)
        log.write(f"== {time.perf_counter() - t:.1f} s: {' '.join(cmd[:4])}\n".encode())
        log.flush()

    wheels = os.path.join(tmp, "wheel")
    # the venv's own build tools, a build directory of its own (build/ untouched)
    run([sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "--no-build-isolation",
         "-q", "--disable-pip-version-check", "-w", wheels,
         "-C", f"build-dir={os.path.join(tmp, 'wheel-build')}"], cwd=tmp)
    wheel = os.path.join(wheels, next(n for n in os.listdir(wheels) if n.endswith(".whl")))
    env = os.path.join(tmp, "env")
    run([sys._base_executable, "-m", "venv", env])
    run([os.path.join(env, "bin", "python"), "-m", "pip", "install", "-q",
         "--disable-pip-version-check", f"{wheel}[spark]"])
    archive = os.path.join(tmp, "env.tar.gz")
    run([os.path.join(os.path.dirname(sys.executable), "venv-pack"), "-p", env, "-o", archive,
         "--exclude", "*/site-packages/pyspark/jars/*", "--compress-level", "1", "-q"])
    shutil.rmtree(env)
    return archive


class Cluster:
    def __init__(self, tmp: str):
        self.tmp = tmp
        self.home = _procs.spark_home()
        self.port, self.ui = _procs.free_port(), _procs.free_port()
        self.master = f"spark://127.0.0.1:{self.port}"
        self.procs: list[_procs.Proc] = []
        self.worker_uis: list[int] = []

    def start(self, workers: int = 2, cores: int = 1, memory: str = "1536m"):
        """A master and ``workers`` workers of ``cores`` cores and ``memory`` each."""
        env = _procs.base_env(SPARK_HOME=self.home, SPARK_DAEMON_MEMORY="384m")
        self.procs.append(_procs.Proc(
            "master", [os.path.join(self.home, "bin", "spark-class"),
                       "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                       "--port", str(self.port), "--webui-port", str(self.ui)],
            os.path.join(self.tmp, "master.log"), env, self.tmp))
        for i in range(workers):
            ui = _procs.free_port()
            self.worker_uis.append(ui)
            home = os.path.join(self.tmp, f"spark-home-{i}")
            work = os.path.join(self.tmp, f"worker-{i}")
            os.makedirs(home)
            os.makedirs(work)
            # in a mount namespace of its own: Spark's jars bound at home, then
            # the driver's venv (which holds them) covered by an empty tmpfs
            script = (f'mount --bind "{self.home}" "{home}" && '
                      f'mount -t tmpfs -o size=1m,mode=755 rowformat-hidden-venv "{sys.prefix}" '
                      f'&& exec "{home}/bin/spark-class" org.apache.spark.deploy.worker.Worker '
                      f'{self.master} --cores {cores} --memory {memory} --host 127.0.0.1 '
                      f'--webui-port {ui} --work-dir "{work}"')
            self.procs.append(_procs.Proc(
                f"worker {i}", ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                os.path.join(self.tmp, f"worker-{i}.log"),
                _procs.base_env(SPARK_HOME=home, SPARK_DAEMON_MEMORY="384m"), self.tmp))

    def wait(self, workers: int = 2, timeout: float = 180):
        def alive():
            state = _procs.get_json(f"http://127.0.0.1:{self.ui}/json/")
            return len([w for w in state["workers"] if w["state"] == "ALIVE"]) == workers
        _procs.wait_for(f"{workers} ALIVE workers", alive, timeout, self.procs)

    def stop(self):
        for p in reversed(self.procs):
            p.stop()

    def app_conf(self, **extra) -> dict:
        conf = {
            "spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
            "spark.ui.port": str(_procs.free_port()), "spark.ui.showConsoleProgress": "false",
            "spark.driver.extraJavaOptions": FAST_JVM, "spark.executor.extraJavaOptions": FAST_JVM,
            "spark.executor.memory": "1g", "spark.executor.cores": "1", "spark.cores.max": "2",
            "spark.sql.shuffle.partitions": "4", "spark.sql.session.timeZone": "UTC",
        }
        conf.update(extra)
        return conf

    def run_job(self, cfg: dict, env: dict, name: str, timeout: float = 420):
        import json
        cfg = {"master": self.master, "worker_uis": self.worker_uis, "demo": DEMO, **cfg}
        workdir = cfg["workdir"]
        rc, out = _procs.run_script(os.path.join(HERE, "cluster_job.py"), [json.dumps(cfg)],
                                    env, workdir, timeout, os.path.join(workdir, f"{name}.log"))
        return rc, out


def driver_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYSPARK_", "SPARK_")) and k != "PYTHONPATH"}
    env.update(SPARK_LOCAL_IP="127.0.0.1")
    env.update(extra)
    return env


def cluster_session(tmp_path_factory):
    """The ``cluster`` fixture's body (conftest.py: one cluster for the
    session, shared with test_connect.py's Connect server)."""
    why = _why_not()
    if why:
        pytest.skip(why)
    tmp = str(tmp_path_factory.mktemp("cluster"))
    built: dict = {}
    log = open(os.path.join(tmp, "archive.log"), "wb")

    def build():
        try:
            t = time.perf_counter()
            built["archive"] = build_archive(tmp, log)
            built["seconds"] = time.perf_counter() - t
        except BaseException as e:     # noqa: BLE001 - reported below
            built["error"] = e

    builder = threading.Thread(target=build, daemon=True)
    builder.start()                   # the wheel and the venv while the JVMs start
    c = Cluster(tmp)
    try:
        c.start()
        c.wait()
        builder.join(900)
        log.close()
        if "archive" not in built:
            with open(os.path.join(tmp, "archive.log"), errors="replace") as f:
                raise RuntimeError(f"building the archive failed: {built.get('error')!r}\n"
                                   f"{f.read()[-4000:]}")
        c.archive = built["archive"]
        print(f"\narchive built in {built['seconds']:.0f} s "
              f"({os.path.getsize(c.archive) / 1e6:.0f} MB)")
        yield c
    finally:
        c.stop()
        builder.join(1)
        # ~2 GB: the executors' copies of the archive, the archive, the wheel's build
        # (the logs stay, for a failure's post-mortem; pytest keeps three runs' tmp)
        for name in os.listdir(tmp):
            if name.startswith(("worker-", "wheel-build", "env")) and \
                    os.path.isdir(os.path.join(tmp, name)):
                for sub in os.listdir(os.path.join(tmp, name)):
                    if sub.startswith("app-") or name.startswith(("wheel-build", "env")):
                        shutil.rmtree(os.path.join(tmp, name, sub), ignore_errors=True)
        if "archive" in built and os.path.exists(built["archive"]):
            os.remove(built["archive"])


def test_the_demo_pipeline_runs_on_two_workers_from_a_shipped_venv(cluster, tmp_path):
    t = time.perf_counter()
    env = driver_env(PYSPARK_PYTHON="./environment/bin/python",
                     PYSPARK_DRIVER_PYTHON=sys.executable)
    conf = cluster.app_conf(**{"spark.archives": f"{cluster.archive}#environment"})
    rc, out = cluster.run_job({"mode": "pipeline", "workdir": str(tmp_path), "conf": conf,
                               "rows": 40_000, "lookups": 2_000}, env, "pipeline")
    assert rc == 0, out[-8000:]
    got = _procs.result_line(out, "CLUSTER-RESULT")
    assert "all checks passed" in out and "stock pypaimon reads the same rows" in out
    # register() is quiet (the log level is Spark's default, WARN, here)
    assert "replaced a statically registered data source" not in out
    # without register(), Spark's own lookup would run the driver's Python on the executors
    assert "register(spark)" in got["automatic_source"], got["automatic_source"]
    assert "PYSPARK_DRIVER_PYTHON" in got["automatic_source"]
    # register() linked ./environment for the driver's planning workers; gone at exit
    assert got["driver_link"].endswith("/environment"), got
    assert not os.path.lexists(tmp_path / "environment")
    # the check task ran the archive's Python in an executor's working directory
    probe = got["probe"]
    assert probe["python"].endswith("/environment/bin/python"), probe
    assert probe["python"].startswith(cluster.tmp + "/worker-"), probe
    assert probe["version"] == rowformat.__version__
    # both workers' executors ran tasks (the REST API's counts)
    by_worker = got["tasks"]["by_worker"]
    assert len(by_worker) == 2 and all(n > 0 for n in by_worker.values()), got["tasks"]
    print(f"pipeline on the cluster: {time.perf_counter() - t:.1f} s (the pipeline "
          f"{got['pipeline_s']} s); tasks by worker {by_worker}")


def test_a_worker_python_the_executors_lack_fails_register_naming_it(cluster, tmp_path):
    # the driver's venv Python: fine on the driver, absent on every worker
    env = driver_env(PYSPARK_PYTHON=sys.executable)
    conf = cluster.app_conf(**{"spark.task.maxFailures": "1"})
    rc, out = cluster.run_job({"mode": "unshipped", "workdir": str(tmp_path), "conf": conf},
                              env, "unshipped", timeout=240)
    assert rc == 0, out[-8000:]
    text = _procs.result_line(out, "CLUSTER-RESULT")["register"]
    assert text != "no error"
    assert "executors" in text and sys.executable in text, text
    assert "Install the rowformat wheel" in text and "spark.archives" in text, text


def test_the_cluster_benchmark_runs(cluster, tmp_path):
    """benchmarks/spark_cluster.py's job, tiny: every operation timed on both formats."""
    from .cluster_job import SCANS
    env = driver_env(PYSPARK_PYTHON="./environment/bin/python",
                     PYSPARK_DRIVER_PYTHON=sys.executable)
    conf = cluster.app_conf(**{"spark.archives": f"{cluster.archive}#environment"})
    rc, out = cluster.run_job({"mode": "bench", "workdir": str(tmp_path), "conf": conf,
                               "rows": 2_000, "repeat": 1}, env, "bench", timeout=300)
    assert rc == 0, out[-8000:]
    bench = _procs.result_line(out, "CLUSTER-RESULT")["bench"]
    ops = ["write"] + [name for name, _ in SCANS]
    assert set(bench) == {f"{fmt}|{op}" for fmt in ("paimon-row", "parquet") for op in ops} | \
        {"paimon-row|3-column aggregate, .schema() projection"}
    assert all(len(v["all"]) == 1 and v["median"] > 0 for v in bench.values())
