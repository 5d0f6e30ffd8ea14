"""PySpark integration: the ``paimon-row`` data source and row lookups.

    import rowformat.spark
    rowformat.spark.register(spark)        # checks the workers' Python; passes Spark's sizing
    df = spark.read.format("paimon-row").load("/data/db.db/t")        # a Paimon table
    df.write.format("paimon-row").mode("append").save("/data/db.db/t")
    rowformat.spark.lookup_row_ids(ids, "/data/db.db/t", columns=["name"])
    rowformat.spark.lookup(hits, "_file", "_row", ["name"], schema="k INT, name STRING")
    df.select(rowformat.spark.from_fory("payload", "id BIGINT, name STRING").alias("row"))
    df.select(rowformat.spark.to_fory(struct("id", "name")).alias("payload"))

See docs/spark.md.

pyspark (``pip install rowformat[spark]``) is imported only when one of the
Spark-facing names below is first used: ``import rowformat.spark`` and the
table helpers (``rowformat.paimon.tables``, over pypaimon) work without it.
"""
from __future__ import annotations

from importlib import import_module

FORMAT_NAME = "paimon-row"

# name -> module that defines it; loaded on first access (PEP 562)
_LAZY = {
    "RowDataSource": "datasource",
    "lookup": "lookups",
    "lookup_udf": "lookups",
    "lookup_row_ids": "lookups",
    "from_fory": "fory_columns",
    "to_fory": "fory_columns",
    "to_spark_schema": "spark_types",
    "from_spark_schema": "spark_types",
    "to_spark_type": "spark_types",
    "from_spark_type": "spark_types",
}

__all__ = ["FORMAT_NAME", "register", "check_workers", *_LAZY]


def _import(module: str):
    try:
        return import_module(f"{__name__}.{module}")
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] == "pyspark":
            raise ModuleNotFoundError(
                "rowformat.spark needs pyspark 4.1 or newer: pip install 'rowformat[spark]'",
                name="pyspark") from e
        raise


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(_import(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(spark) -> None:
    """Registers the ``paimon-row`` source with ``spark``, carrying the
    session's partition sizing settings (``spark.sql.files.maxPartitionBytes``,
    ``spark.sql.files.openCostInBytes``, the default parallelism), which a
    Python source cannot read by itself. Spark also finds the source without
    this, through the top-level ``pyspark_rowformat`` module, with Spark's
    default sizing. Checks first that Spark's Python workers can import
    rowformat (:func:`check_workers`)."""
    check_workers(spark)
    spark.dataSource.register(_import("datasource").configured(spark))


def check_workers(spark) -> None:
    """Raises :class:`~rowformat.errors.WorkerPythonError` when the Python
    that Spark runs its workers with cannot import rowformat (checked once
    per interpreter path)."""
    _import("preflight").check_workers(spark)
