"""How much data a ``paimon-row`` Spark partition holds: Spark's rule for
its file sources,

    split bytes = min(maxPartitionBytes, max(openCostInBytes, total bytes / parallelism))

where a file weighs its size plus ``openCostInBytes``. A Python source sees
only its options, not Spark's settings, so each value comes from the first
of: the read option (``maxPartitionBytes``, ``openCostInBytes``,
``defaultParallelism``; ``bytesPerPartition`` and ``minPartitions`` are the
older names of the first and the last), the session's
``spark.sql.files.maxPartitionBytes`` / ``spark.sql.files.openCostInBytes``
/ default parallelism as :func:`rowformat.spark.register` captured them
(on Spark Connect: ``spark.default.parallelism`` if set), and Spark's
defaults (128 MiB, 4 MiB, the driver's CPU count, which is ``local[*]``'s
parallelism)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..paimon import tables as tb

MAX_PARTITION_BYTES = 128 << 20
OPEN_COST_IN_BYTES = tb.OPEN_COST
# option names (lower-cased, as Spark hands them over) -> the Spark setting
CONFS = {
    "maxpartitionbytes": "spark.sql.files.maxPartitionBytes",
    "opencostinbytes": "spark.sql.files.openCostInBytes",
}
_ALIASES = {"maxpartitionbytes": "bytesperpartition", "defaultparallelism": "minpartitions"}
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_bytes(key: str, value) -> int:
    """A positive byte count from ``value``: an integer, or Spark's size
    text (``"128m"``, ``"4MB"``, ``"1g"``)."""
    m = re.fullmatch(r"\s*(\d+)\s*([bkmgt]?)b?\s*", str(value).lower())
    n = int(m.group(1)) * _UNITS[m.group(2)] if m else 0
    if n < 1:
        raise ValueError(f"option {key!r} must be a positive number of bytes, got {value!r}")
    return n


def session_conf(spark) -> dict[str, str]:
    """The sizing settings of ``spark`` (a SparkSession), as option names."""
    out = {key: spark.conf.get(name) for key, name in CONFS.items()
           if spark.conf.get(name, None) is not None}
    parallelism = default_parallelism(spark)
    if parallelism is not None:
        out["defaultparallelism"] = str(parallelism)
    return out


def default_parallelism(spark) -> int | str | None:
    """``spark``'s default parallelism: the SparkContext's; on Spark Connect
    (no SparkContext) ``spark.default.parallelism`` when set, else None
    (the source then takes the CPU count where it plans)."""
    from .preflight import is_connect
    if is_connect(spark):
        return spark.conf.get("spark.default.parallelism", None)
    return spark.sparkContext.defaultParallelism


@dataclass(frozen=True)
class PartitionSizing:
    max_partition_bytes: int = MAX_PARTITION_BYTES
    open_cost: int = OPEN_COST_IN_BYTES
    parallelism: int = os.cpu_count() or 1

    @classmethod
    def from_options(cls, options, captured: dict[str, str]) -> "PartitionSizing":
        def value(key: str):
            for k in (key, _ALIASES.get(key)):
                if k is not None and options.get(k) is not None:
                    return k, options[k]
            return key, captured.get(key)

        out = {}
        for key, field in (("maxpartitionbytes", "max_partition_bytes"),
                           ("opencostinbytes", "open_cost"),
                           ("defaultparallelism", "parallelism")):
            name, v = value(key)
            if v is not None:
                out[field] = parse_bytes(name, v)   # (a count parses as bytes with no unit)
        return cls(**out)

    def split_bytes(self, total_bytes: int) -> int:
        """The most bytes (files' sizes plus their open costs) one partition takes."""
        return tb.split_target(total_bytes, self.max_partition_bytes, self.open_cost,
                               self.parallelism)
