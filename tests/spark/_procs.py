"""Processes the cluster and Connect tests start from pyspark's own jars: a
standalone master and workers, a Spark Connect server, and driver scripts.
Everything listens on 127.0.0.1, every wait is bounded, and each process is
started in a session of its own and stopped by its PID (its process group:
the JVM and the Python workers it forked), never by name."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request


def spark_home() -> str:
    import pyspark
    return os.path.dirname(pyspark.__file__)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_env(**extra) -> dict:
    """A small environment for a Spark daemon: no PYTHONPATH, no PYSPARK_*."""
    env = {k: v for k, v in os.environ.items()
           if k in ("PATH", "HOME", "LANG", "LC_ALL", "JAVA_HOME", "TMPDIR", "USER")}
    env.update(SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1",
               SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    env.update(extra)
    return env


class Proc:
    """One process we started: its PID, its log, stop() by PID."""

    def __init__(self, name: str, cmd: list[str], log: str, env: dict, cwd: str):
        self.name, self.log = name, log
        with open(log, "wb") as out:
            self.popen = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                          cwd=cwd, stdin=subprocess.DEVNULL,
                                          start_new_session=True)
        self.pid = self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, n: int = 40) -> str:
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM to the process group this process leads (its PID), then
        SIGKILL to it after ``timeout`` seconds."""
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.popen.wait(wait)
                # the group may outlive its leader by a moment (Python workers)
                try:
                    os.killpg(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                return
            except subprocess.TimeoutExpired:
                continue


def get_json(url: str, timeout: float = 5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def wait_for(what: str, check, timeout: float, procs=(), interval: float = 0.5):
    """check() until it returns something true, within ``timeout`` seconds;
    fails early when one of ``procs`` died, showing its log."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        for p in procs:
            if not p.alive():
                raise RuntimeError(f"{p.name} (pid {p.pid}) exited while waiting for "
                                   f"{what}:\n{p.tail()}")
        try:
            got = check()
            if got:
                return got
        except Exception as e:       # not up yet
            last = e
        time.sleep(interval)
    logs = "\n".join(f"--- {p.name} (pid {p.pid}):\n{p.tail()}" for p in procs)
    raise TimeoutError(f"no {what} within {timeout:g} s (last: {last!r})\n{logs}")


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def run_script(script: str, args: list[str], env: dict, cwd: str, timeout: float,
               log: str) -> tuple[int, str]:
    """Runs a driver script under this Python in its own process group,
    killed (by its PID) if it outlives ``timeout``; (exit status, output)."""
    with open(log, "wb") as out:
        p = subprocess.Popen([sys.executable, script, *args], stdout=out,
                             stderr=subprocess.STDOUT, env=env, cwd=cwd,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)
            rc = -9
        else:
            try:                       # its Python workers, if any outlived it
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    with open(log, errors="replace") as f:
        return rc, f.read()


def result_line(output: str, tag: str) -> dict:
    """The JSON a driver script printed after ``tag``."""
    for line in reversed(output.splitlines()):
        if line.startswith(tag + " "):
            return json.loads(line[len(tag) + 1:])
    raise AssertionError(f"no {tag} line in the script's output:\n{output[-6000:]}")
