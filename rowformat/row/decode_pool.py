"""The process's decoding thread pools, one per thread count, shared by all
readers (and forgotten by a forked child, which has none of its parent's
threads)."""
from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def shared_pool(threads: int) -> ThreadPoolExecutor:
    """The process's pool of ``threads`` decoding threads, shared by all
    readers as pyarrow shares its CPU pool: opening a file per scan starts no
    threads, and the memory their allocator arenas keep is reused (a fresh
    pool per reader cost a 1M-row scan about 5 ms of page faults)."""
    with _POOLS_LOCK:
        pool = _POOLS.get(threads)
        if pool is None:
            pool = _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="rowformat-read")
        return pool


def worker_threads() -> Optional[int]:
    """In a PyTorch DataLoader worker, the cores shared out among the
    loader's workers (each worker's readers decompress on that many
    threads, so that the workers together use each core once); elsewhere
    None (the readers' default, the core count)."""
    data = sys.modules.get("torch.utils.data")
    info = data.get_worker_info() if data is not None else None
    if info is None:
        return None
    return max(1, (os.cpu_count() or 1) // info.num_workers)


def _forget_pools_in_child():
    # A forked child (a Spark Python worker) has none of its parent's threads.
    global _POOLS_LOCK
    _POOLS_LOCK = threading.Lock()
    _POOLS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools_in_child)
