"""Filter pushdown on a table in an S3 warehouse (the loopback server of
tests/_s3server.py): the planner prunes files by the statistics read from
the store, ``_ROW_ID`` predicates read their rows by row number through
rowformat's S3 reader with the table's store settings, and the rows are
those of a read with pushdown off."""
import pytest
from pyspark.sql.datasource import EqualTo, In

from rowformat.spark.datasource import PUSHDOWN_CONF
from rowformat.spark.table_source import RowIdSlices

from .test_pushdown import _planned_files, _reader
from .test_spark_object_store import FORMAT, lake  # noqa: F401 (the fixture)


@pytest.fixture
def pushdown_on(spark):
    before = spark.conf.get(PUSHDOWN_CONF, None)
    spark.conf.set(PUSHDOWN_CONF, "true")
    yield spark
    if before is None:
        spark.conf.unset(PUSHDOWN_CONF)
    else:
        spark.conf.set(PUSHDOWN_CONF, before)


def test_pushdown_on_s3(pushdown_on, lake):  # noqa: F811
    spark = pushdown_on
    url = lake.table_url("pushed")
    spark.range(0, 4000, 1, 4).selectExpr("id", "concat('u', id) AS user") \
        .write.format(FORMAT).options(**lake.options) \
        .option("paimon.metadata.stats-mode", "full") \
        .option("paimon.row-tracking.enabled", "true").mode("overwrite").save(url)

    reader = _reader(url, **lake.options)
    reader.pushFilters([EqualTo(("id",), 2500)])
    assert _planned_files(reader) == 1                  # of 4
    by_id = _reader(url, rowIds="true", **lake.options)
    by_id.pushFilters([In(("_ROW_ID",), (7, 3999))])
    parts = by_id.partitions()
    assert all(isinstance(p, RowIdSlices) and p.storage_options for p in parts)
    assert sum(len(p.files) for p in parts) == 2

    def read(push: str, condition: str):
        df = spark.read.format(FORMAT).options(**lake.options).option("rowIds", "true") \
            .option("pushFilters", push).load(url).where(condition)
        return sorted(tuple(r) for r in df.collect())
    for condition in ("id = 2500", "_ROW_ID IN (7, 3999)", "user LIKE 'u39%' AND id > 3950",
                      "_ROW_ID BETWEEN 990 AND 1010"):
        got = read("true", condition)
        assert got and got == read("false", condition), condition
