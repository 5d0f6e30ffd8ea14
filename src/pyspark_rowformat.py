"""Lets Spark find the ``paimon-row`` data source by itself: on its first
data-source lookup, Spark 4 imports every top-level module named
``pyspark_*`` and registers the ``DefaultSource`` it defines. One module
failing to import breaks that lookup for all of them, so this one never
raises: without a usable rowformat/pyspark it simply defines nothing, and
``rowformat.spark.register(spark)`` remains the explicit fallback."""
try:
    from rowformat.spark.datasource import RowDataSource as DefaultSource  # noqa: F401
except Exception as e:  # noqa: BLE001 - see the docstring
    import warnings
    warnings.warn(f"pyspark_rowformat: the paimon-row data source is unavailable: {e!r}")
