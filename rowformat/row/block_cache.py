"""An LRU cache of decompressed blocks with a byte budget, safe to share
between threads."""
from __future__ import annotations

import threading
from collections import OrderedDict


class BlockCache:
    def __init__(self, budget_bytes: int):
        self.budget = int(budget_bytes)
        self._items: OrderedDict = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key):
        # No lock: the dict's get and move_to_end are each atomic under the
        # GIL, and a put evicting the key in between only costs the move
        # (the hit and miss counts are statistics, not exact under threads).
        item = self._items.get(key)
        if item is None:
            self.misses += 1
            return None
        try:
            self._items.move_to_end(key)
        except KeyError:
            pass
        self.hits += 1
        return item[0]

    def __contains__(self, key) -> bool:
        return key in self._items

    def put(self, key, block, nbytes: int):
        if nbytes > self.budget:
            return
        with self._lock:
            if key in self._items:
                return
            self._items[key] = (block, nbytes)
            self._bytes += nbytes
            while self._bytes > self.budget:
                _, (_, size) = self._items.popitem(last=False)
                self._bytes -= size

    def pop(self, key) -> None:
        with self._lock:
            item = self._items.pop(key, None)
            if item is not None:
                self._bytes -= item[1]

    @property
    def nbytes(self) -> int:
        return self._bytes

    def clear(self):
        with self._lock:
            self._items.clear()
            self._bytes = 0
