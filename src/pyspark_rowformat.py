"""Lets Spark find the ``paimon-row`` data source by itself: on its first
data-source lookup, Spark 4 imports every top-level module named
``pyspark_*`` and registers the ``DefaultSource`` it defines. One module
failing to import breaks that lookup for all of them, so this one never
raises: without a usable rowformat/pyspark it simply defines nothing, and
``rowformat.spark.register(spark)`` remains the explicit fallback.

Spark runs a source found this way with the driver's Python
(``PYSPARK_DRIVER_PYTHON``), also in its executor tasks; when that is not the
workers' ``PYSPARK_PYTHON`` this source refuses to plan, naming the fix
(``register(spark)``, which registers the source with the workers' Python):
see ``rowformat.spark.preflight.automatic_source_python``."""
try:
    from rowformat.spark.datasource import RowDataSource
    from rowformat.spark.preflight import automatic_source_python

    class DefaultSource(RowDataSource):
        """``paimon-row`` as Spark's automatic lookup registers it."""

        def schema(self):
            automatic_source_python()
            return super().schema()

        def reader(self, schema):
            automatic_source_python()
            return super().reader(schema)

        def writer(self, schema, overwrite):
            automatic_source_python()
            return super().writer(schema, overwrite)
except Exception as e:  # noqa: BLE001 - see the docstring
    import warnings
    warnings.warn(f"pyspark_rowformat: the paimon-row data source is unavailable: {e!r}")
