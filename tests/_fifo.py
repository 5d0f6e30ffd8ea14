"""Named pipes in place of files, and a guard for calls that used to block
on them forever. The guard's timeout is generous and never the assertion:
the code under test opens without blocking, so a pass takes milliseconds;
only a regression waits, and is then unblocked and failed."""
import os
import threading

GUARD_SECONDS = 60


def make_fifo(path) -> str:
    """Replaces ``path`` (if any) with a named pipe; returns it as a str."""
    path = os.fspath(path)
    if os.path.lexists(path):
        os.unlink(path)
    os.mkfifo(path)
    return path


def call_guarded(fn, *fifos):
    """``fn()``'s exception (None if it returned). If it is still running
    after GUARD_SECONDS (blocked on one of ``fifos``), the pipes get a writer
    that closes at once, which ends the blocked call, and the test fails."""
    outcome = {}

    def run():
        try:
            fn()
            outcome["error"] = None
        except BaseException as e:      # noqa: B902 - handed to the test
            outcome["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(GUARD_SECONDS)
    if t.is_alive():
        for fifo in fifos:
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        t.join(GUARD_SECONDS)
        raise AssertionError(f"blocked on a named pipe for {GUARD_SECONDS} s: {fifos}")
    return outcome["error"]
