"""What every read and write does first in a Spark Python worker: settle
the worker process once (GC tuning), and for readers, the shared frame of
``partitions()`` and ``read()``."""
from __future__ import annotations

import gc
import json
import os
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader
from pyspark.sql.types import StructType

from ..paimon import tables as tb
from .preflight import Shipped
from .spark_types import spark_arrow_schema

_settled = False


def settle_worker() -> None:
    """Once per reused PySpark worker: imports the modules a table read or
    write needs, then moves every object alive (the modules' functions,
    classes and constants: ~125,000 with pypaimon loaded) out of the cyclic
    garbage collector's reach. PySpark's daemon runs ``gc.collect()`` after
    each request a reused worker serves (every task, every planning call),
    and a full collection walks every tracked object: ~50 ms a request here,
    0.2-0.25 s of CPU per scan, against ~2 ms once frozen. Module contents
    live as long as the process, so freezing them frees nothing less; it is
    done first thing in a request, before the request's own objects exist."""
    global _settled
    if _settled or not os.environ.get("SPARK_REUSE_WORKER"):
        return      # (without reuse each request has a fresh process, and no collect)
    _settled = True
    try:
        import pypaimon  # noqa: F401
    except ImportError:
        pass        # bare .row files need no pypaimon
    else:
        with tb.acceleration():     # imports the pypaimon modules it patches
            pass
    gc.collect()
    gc.freeze()


class SourceReader(Shipped, DataSourceReader):
    """A reader whose partitions are ``partition_type``: subclasses set
    ``spark_schema_json`` and define ``plan()`` (driver side) and
    ``read_partition(partition, target)`` (yielding batches of the Arrow
    schema ``target`` that Spark requires). Pickled to the executors as
    :class:`~.preflight.Shipped`: a worker without rowformat says which
    Python it is."""

    partition_type: type = type(None)
    spark_schema_json: str

    def partitions(self):                 # driver side, once per query
        settle_worker()
        return self.plan()                # [] -> Spark runs one InputPartition(None)

    def read(self, partition) -> Iterator[pa.RecordBatch]:   # executor side
        if not isinstance(partition, self.partition_type):
            return
        settle_worker()
        target = spark_arrow_schema(StructType.fromJson(json.loads(self.spark_schema_json)))
        yield from self.read_partition(partition, target)

    def plan(self) -> list:
        raise NotImplementedError

    def read_partition(self, partition, target: pa.Schema) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError
