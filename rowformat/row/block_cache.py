"""An LRU cache of decompressed blocks with a byte budget, safe to share
between threads and between the block stores of many files (a dataset's
readers share one: one budget however many files it has)."""
from __future__ import annotations

import itertools
import threading
from collections import OrderedDict

# A store's keys are its base plus 2 * block (a whole block) or 2 * block + 1
# (a lookup's partly decompressed prefix of it): 2^32 blocks a file
OWNER_SPAN = 1 << 33


class BlockCache:
    def __init__(self, budget_bytes: int):
        self.budget = int(budget_bytes)
        self._items: OrderedDict = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._owners = itertools.count()
        self.hits = 0
        self.misses = 0

    def owner(self) -> int:
        """A new owner's key base (a block store's): its keys are base + k,
        0 <= k < OWNER_SPAN."""
        return next(self._owners) * OWNER_SPAN

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
        """The bytes held, all owners'."""
        return self._bytes

    def clear(self, owner: int | None = None):
        """Drops every item, or only those of ``owner`` (a key base)."""
        with self._lock:
            if owner is None:
                self._items.clear()
                self._bytes = 0
                return
            for key in [k for k in self._items if owner <= k < owner + OWNER_SPAN]:
                self._bytes -= self._items.pop(key)[1]
