"""PySpark integration: the ``paimon-row`` data source and row lookups.

    import rowformat.spark
    rowformat.spark.register(spark)        # checks the workers' Python; passes Spark's sizing
    df = spark.read.format("paimon-row").load("/data/db.db/t")        # a Paimon table
    df.write.format("paimon-row").mode("append").save("/data/db.db/t")
    rowformat.spark.lookup_row_ids(ids, "/data/db.db/t", columns=["name"])
    rowformat.spark.lookup(hits, "_file", "_row", ["name"], schema="k INT, name STRING")
    df.select(rowformat.spark.from_fory("payload", "id BIGINT, name STRING").alias("row"))
    df.select(rowformat.spark.to_fory(struct("id", "name")).alias("payload"))
    rowformat.spark.expire_snapshots(spark, "/data/db.db/t", retain_last=1)  # old snapshots' files
    rowformat.spark.remove_orphan_files(spark, "/data/db.db/t")   # files failed writes left
    rowformat.spark.compact(spark, "/data/db.db/t")   # small files or sorted runs rewritten on the executors

See docs/spark.md.

pyspark (``pip install rowformat[spark]``) is imported only when one of the
Spark-facing names below is first used: ``import rowformat.spark`` and the
table helpers (``rowformat.paimon.tables``, over pypaimon) work without it.
"""
from __future__ import annotations

import threading
from importlib import import_module

FORMAT_NAME = "paimon-row"

# name -> module that defines it; loaded on first access (PEP 562)
_LAZY = {
    "RowDataSource": "datasource",
    "lookup": "lookups",
    "lookup_udf": "lookups",
    "lookup_row_ids": "lookups",
    "expire_snapshots": "maintenance",
    "remove_orphan_files": "maintenance",
    "compact": "maintenance",
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


_REGISTERING = threading.Lock()


def register(spark) -> None:
    """Registers the ``paimon-row`` source with ``spark`` (a classic or a
    Spark Connect session), carrying the session's partition sizing settings
    (``spark.sql.files.maxPartitionBytes``, ``spark.sql.files.openCostInBytes``,
    the default parallelism) and storage settings, which a Python source
    cannot read by itself. Checks first that Spark's Python workers can
    import rowformat where they run (:func:`check_workers`).

    Call it on a cluster: Spark also finds the source by itself, through the
    top-level ``pyspark_rowformat`` module, but runs that source's workers
    with the driver's Python (``PYSPARK_DRIVER_PYTHON``, else the driver
    JVM's ``PYSPARK_PYTHON``), not the session's workers' Python; the source
    registered here runs with the session's (``spark.sparkContext.pythonExec``,
    the archive's ``./environment/bin/python``, ...). Prints nothing unless
    something is wrong (Spark's notice that it replaced the automatically
    found source is filtered out of the driver's log, also where Spark
    repeats it later, at each ``cache()``).

    Call it in every thread that reads or writes ``paimon-row``: Spark finds
    a Python data source through the calling thread's active session only,
    which a new thread lacks (``DATA_SOURCE_NOT_FOUND``; PySpark's
    ``getOrCreate()`` does not set it). register() sets it for its thread;
    after the first call it is quick (the worker check is made once).

    Turns on ``spark.sql.python.filterPushdown.enabled`` for the session
    unless it was set (to either value), on Spark versions that keep a
    pushed read on its query: the source then gets Spark's filters, prunes
    partitions, buckets and files by them and evaluates them on the decoded
    rows (``option("pushFilters", "false")`` turns that off for one read;
    docs/spark.md, "Filter pushdown"). Spark 4.3.0 and older keep it on
    the DataFrame, and a later query of that DataFrame that pushes no filter
    reuses the pruned read (too few rows): there the conf is left as it is."""
    check_workers(spark)
    datasource = _import("datasource")
    if spark.conf.get(datasource.PUSHDOWN_CONF, None) is None \
            and not datasource.reuses_pushed_reads(spark.version):
        spark.conf.set(datasource.PUSHDOWN_CONF, "true")
    source = datasource.configured(spark)
    with _REGISTERING:
        _hide_replaced_notice(spark)
        spark.dataSource.register(source)
    _activate(spark)


def _activate(spark) -> None:
    """Makes ``spark`` the active session of the JVM thread that serves this
    Python thread (classic sessions; a Connect server has its own)."""
    from .preflight import is_connect
    if not is_connect(spark):
        spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)


_DATA_SOURCE_MANAGER = "org.apache.spark.sql.execution.datasources.DataSourceManager"
# Spark's WARN each time paimon-row is registered over the source it found by
# itself, or over an earlier register(): on register(), and again on every
# copy of the session's sources (each df.cache() copies the session)
_REPLACED_NOTICE = f"The data source {FORMAT_NAME} replaced a "


def _hide_replaced_notice(spark) -> None:
    """Adds a log4j filter that drops Spark's notices about paimon-row being
    replaced, and nothing else, to the logger config that Spark's
    DataSourceManager logs through (classic sessions; a Connect server logs
    on the server): the replacement is what register() is for, and the
    notice would otherwise come back at every ``cache()``, long after
    register() returned. No logger config of its own is made for
    DataSourceManager: Spark's console filter would then let that logger's
    INFO lines through. Once per log4j configuration; another logging
    backend keeps the notice."""
    try:
        from .preflight import is_connect
        if is_connect(spark):
            return
        log4j = spark.sparkContext._jvm.org.apache.logging.log4j
        config = log4j.LogManager.getContext(False).getConfiguration()
        logger = config.getLoggerConfig(_DATA_SOURCE_MANAGER)   # the root's, unless configured
        if _REPLACED_NOTICE in str(logger.getFilter()):
            return
        result = getattr(log4j.core, "Filter$Result")
        notice = log4j.core.filter.StringMatchFilter.newBuilder() \
            .setMatchString(_REPLACED_NOTICE).setOnMatch(result.DENY) \
            .setOnMismatch(result.NEUTRAL).build()
        notice.start()
        logger.addFilter(notice)
    except Exception:       # another logging backend: Spark's notice stays
        pass


def check_workers(spark) -> None:
    """Raises :class:`~rowformat.errors.WorkerPythonError` when the Python
    that Spark runs its workers with cannot import rowformat where it runs:
    on the driver (where the source is planned) and, unless the master is
    ``local``, on an executor (a one-task job). Checked once per application
    and interpreter; see :mod:`rowformat.spark.preflight`."""
    _import("preflight").check_workers(spark)
