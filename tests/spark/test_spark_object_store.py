"""The paimon-row source, its lookups and bare .row files on a real
S3-protocol server (moto on loopback, tests/_s3server.py): tables written by
Spark read back equal through stock pypaimon with the same catalog options
and the other way round; the store's settings come from the read and write
options (or the session's S3A settings, or the driver's AWS_* variables)
and reach the tasks with them, whose processes (Spark's Python workers,
started by the JVM before any variable of a test was set) have no settings
of their own; nothing is ever written to a local path made of a URL."""
import os

import pyarrow as pa
import pytest
from pyroaring import BitMap

import rowformat
from rowformat.spark import lookups as lk
from rowformat.spark.datasource import RowDataSource, configured
from tests.paimon._tables import write

FORMAT = "paimon-row"
N = 600
SCHEMA = "id BIGINT NOT NULL, day INT, user STRING"
AWS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
       "AWS_REGION", "AWS_DEFAULT_REGION")


class Lake:
    """A bucket on the session's S3 server, a pypaimon catalog on its
    warehouse, and the read/write options that reach it."""

    def __init__(self, server):
        import uuid
        from pypaimon import CatalogFactory
        self.server = server
        self.bucket = f"spark-{uuid.uuid4().hex[:8]}"
        server.make_bucket(self.bucket)
        self.catalog_options = server.catalog_options()
        self.options = {f"paimon.{k}": v for k, v in self.catalog_options.items()}
        self.warehouse = f"s3://{self.bucket}/wh"
        self.catalog = CatalogFactory.create({"warehouse": self.warehouse, **self.catalog_options})
        self.catalog.create_database("db", True)

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def table_url(self, name: str) -> str:
        return f"{self.warehouse}/db.db/{name}"

    def stock_read(self, name: str) -> pa.Table:
        """The table read by stock pypaimon through a catalog on the warehouse."""
        import rowformat.paimon
        assert not rowformat.paimon.is_accelerated()
        table = self.catalog.get_table(f"db.{name}")
        rb = table.new_read_builder()
        return rb.new_read().to_arrow(rb.new_scan().plan().splits())

    def keys(self, prefix: str) -> list[str]:
        import pyarrow.fs as pafs
        fs = pafs.S3FileSystem(**self.server.storage_options())
        infos = fs.get_file_info(pafs.FileSelector(f"{self.bucket}/{prefix}", recursive=True,
                                                   allow_not_found=True))
        return [i.path for i in infos if i.type == pafs.FileType.File]


@pytest.fixture(scope="module")
def lake(s3_server):
    # the driver's own variables are not the workers': none are set here
    saved = {k: os.environ.pop(k) for k in AWS if k in os.environ}
    yield Lake(s3_server)
    os.environ.update(saved)


@pytest.fixture(autouse=True)
def _nothing_written_locally(spark):
    """No directory named after a scheme (``s3:``, ``s3a:``) in the working
    directory, which the driver's planning workers share with the JVM."""
    yield
    assert not [n for n in os.listdir(".") if n.endswith(":")], os.listdir(".")


def events(spark, start=0, n=N):
    return spark.range(start, start + n, 1, 2).selectExpr(
        "id", "CAST(id % 3 AS INT) AS day",
        "CASE WHEN id % 7 = 0 THEN NULL ELSE concat('u', id) END AS user")


def rows(table: pa.Table):
    return sorted(zip(*(table.column(c).to_pylist() for c in ("id", "day", "user"))))


def spark_rows(df):
    return sorted(tuple(r) for r in df.select("id", "day", "user").collect())


@pytest.fixture(scope="module")
def table(spark, lake):
    """An S3 table written by Spark: partitioned by day, row tracking on."""
    url = lake.table_url("events")
    events(spark).write.format(FORMAT).options(**lake.options) \
        .option("partitionKeys", "day").option("paimon.row-tracking.enabled", "true") \
        .mode("append").save(url)
    return url


def test_a_table_written_by_spark_is_read_by_stock_pypaimon(spark, lake, table):
    want = spark_rows(events(spark))
    assert rows(lake.stock_read("events")) == want
    assert spark_rows(spark.read.format(FORMAT).options(**lake.options).load(table)) == want
    assert any(k.endswith(".row") for k in lake.keys("wh/db.db/events/day=1/"))
    # the connection's settings are not table options: no key in the schema
    options = lake.catalog.get_table("db.events").options.options.to_map()
    assert options["row-tracking.enabled"] == "true"
    assert not [k for k in options if k.startswith("s3.")], options
    # _ROW_ID
    ids = spark.read.format(FORMAT).options(**lake.options).option("rowIds", "true").load(table)
    assert sorted(r[0] for r in ids.select("_ROW_ID").collect()) == list(range(N))
    # s3a:// names the same objects
    s3a = table.replace("s3://", "s3a://")
    assert spark.read.format(FORMAT).options(**lake.options).load(s3a).count() == N


def test_overwrites_and_upserts_on_s3(spark, lake):
    """A primary-key table: an upsert merges, a dynamic overwrite replaces
    one partition, a static one everything."""
    url = lake.table_url("pk")
    opts = dict(lake.options, primaryKeys="id", partitionKeys="day", bucket="2")
    events(spark).write.format(FORMAT).options(**opts).mode("append").save(url)
    # upsert: ids 0..99 get new users
    events(spark, 0, 100).selectExpr("id", "day", "concat('new', id) AS user") \
        .write.format(FORMAT).options(**opts).mode("append").save(url)
    want = {i: (i, i % 3, f"new{i}" if i < 100 else None if i % 7 == 0 else f"u{i}")
            for i in range(N)}
    assert spark_rows(spark.read.format(FORMAT).options(**lake.options).load(url)) == \
        sorted(want.values())
    # dynamic overwrite: day 1 holds ids 1, 4, ..., 28 only
    events(spark, 0, 30).where("day = 1").write.format(FORMAT).options(**opts) \
        .option("partitionOverwriteMode", "dynamic").mode("overwrite").save(url)
    want = {i: r for i, r in want.items() if r[1] != 1}
    want.update({i: (i, 1, None if i % 7 == 0 else f"u{i}") for i in range(1, 30, 3)})
    assert rows(lake.stock_read("pk")) == sorted(want.values())
    # static overwrite: everything
    events(spark, 1000, 10).write.format(FORMAT).options(**opts).mode("overwrite").save(url)
    assert rows(lake.stock_read("pk")) == spark_rows(events(spark, 1000, 10))


def test_two_concurrent_jobs_appending_lose_nothing(spark, lake):
    """Two Spark jobs at a time (two driver threads, each job's commit in a
    Python process of its own) append to one S3 table, round after round:
    every job's rows are there exactly once, one snapshot per job, ids
    contiguous (the snapshots are created with If-None-Match: *, a loser
    retries with the next id)."""
    import threading
    url = lake.table_url("race")
    events(spark, 0, 10).write.format(FORMAT).options(**lake.options).mode("append").save(url)
    rounds, n, errors = 6, 40, []
    barrier = threading.Barrier(2, timeout=120)
    lake.server.clear_log()

    def job(k):
        try:
            rowformat.spark.register(spark)     # the thread's active session (else not found)
            for r in range(rounds):
                barrier.wait()
                events(spark, 1000 * (1 + 2 * r + k), n).write.format(FORMAT) \
                    .options(**lake.options).mode("append").save(url)
        except BaseException as e:      # the other thread's barrier must not wait forever
            errors.append(str(e)[:4000])
            barrier.abort()

    threads = [threading.Thread(target=job, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not errors, errors
    got = [r[0] for r in rows(lake.stock_read("race"))]
    assert len(got) == 10 + 2 * rounds * n and len(set(got)) == len(got)
    assert set(got) == set(range(10)) | {1000 * j + i for j in range(1, 1 + 2 * rounds)
                                         for i in range(n)}
    snapshots = sorted(int(k.rsplit("-", 1)[1]) for k in lake.keys("wh/db.db/race/snapshot/")
                       if "/snapshot-" in k)
    assert snapshots == list(range(1, 2 + 2 * rounds))
    # each snapshot object was created once and never replaced (a lost race is a 412)
    puts = [r for r in lake.server.log() if r.method == "PUT" and r.bucket == lake.bucket
            and "/race/snapshot/snapshot-" in r.key]
    created = sorted(int(r.key.rsplit("-", 1)[1]) for r in puts if r.status == 200)
    assert created == list(range(2, 2 + 2 * rounds))
    assert all(r.status in (200, 412) for r in puts), [(r.key, r.status) for r in puts]


def test_a_failed_first_write_beside_a_concurrent_one_on_s3(spark, lake, tmp_path):
    """Issue 40, item 3, on the store (its create is a conditional PUT): the
    failed first write keeps the table another job commits to."""
    from .test_write_safety import race_a_failed_first_write
    url = lake.table_url("raced")
    a_errors, b_errors = race_a_failed_first_write(spark, url, str(tmp_path), lake.options,
                                                   lake.catalog_options)
    assert len(a_errors) == 1 and "write A fails" in a_errors[0]
    assert b_errors == []
    assert sorted(lake.stock_read("raced").column("id").to_pylist()) == [100, 101, 102, 103, 104]
    assert lake.keys("wh/db.db/raced/schema/") == [f"{lake.bucket}/wh/db.db/raced/schema/schema-0"]


def test_a_table_written_by_stock_pypaimon_is_read_by_spark(spark, lake):
    from pypaimon import Schema
    data = pa.table({"id": pa.array(range(50), pa.int64()),
                     "day": pa.array([i % 2 for i in range(50)], pa.int32()),
                     "user": [f"s{i}" for i in range(50)]})
    lake.catalog.create_table("db.stock", Schema.from_pyarrow_schema(
        data.schema, partition_keys=["day"], options={"file.format": "row"}), True)
    write(lake.catalog.get_table("db.stock"), data)      # stock pypaimon
    df = spark.read.format(FORMAT).options(**lake.options).load(lake.table_url("stock"))
    assert spark_rows(df) == rows(data)


def test_lookups_on_s3(spark, lake, table):
    """lookup_row_ids of the Spark-written table; lookup and lookup_udf of
    bare .row files, their paths and row numbers read by the source. The
    distributed paths (local_max_rows=0) read in workers that know nothing
    but what the lookup carries."""
    storage = lake.catalog_options
    ids = spark.read.format(FORMAT).options(**lake.options).option("rowIds", "true") \
        .load(table).select("_ROW_ID", "id", "user")
    got = lk.lookup_row_ids(ids.where("id % 50 = 3"), table, ["user"], prefix="hit_",
                            storage_options=storage, local_max_rows=0).collect()
    assert len(got) == 12 and all(r["user"] == r["hit_user"] for r in got)
    # bare .row files in a directory of the bucket
    for k in range(2):
        with rowformat.RowFileWriter(lake.url(f"files/part-{k}.row"), "k INT, v STRING",
                                     storage_options=storage) as w:
            w.write_rows([(k * 100 + i, f"v{k}-{i}") for i in range(100)])
    keys = spark.read.format(FORMAT).options(**lake.options) \
        .option("paimonSchema", "k INT, v STRING").option("rowNumbers", "true") \
        .load(lake.url("files/")).where("k % 10 = 1")
    assert sorted((r["_file"], r["_row"]) for r in keys.collect()) == \
        [(lake.url(f"files/part-{k}.row"), i) for k in range(2) for i in range(1, 100, 10)]
    hits = lk.lookup(keys.select("k", "_file", "_row"), "_file", "_row", ["v"],
                     schema="k INT, v STRING", prefix="hit_", storage_options=storage,
                     local_max_rows=0)
    assert sorted((r["k"], r["hit_v"]) for r in hits.collect()) == \
        sorted((k, f"v{k // 100}-{k % 100}") for k in range(200) if k % 10 == 1)
    fetch = lk.lookup_udf(["v"], schema="k INT, v STRING", storage_options=storage)
    got = keys.select("k", fetch("_file", "_row").alias("hit")).collect()
    assert all(r["hit"]["v"] == f"v{r['k'] // 100}-{r['k'] % 100}" for r in got)
    # a selection bitmap on the store too
    import pyarrow.fs as pafs
    fs = pafs.S3FileSystem(**lake.server.storage_options())
    with fs.open_output_stream(f"{lake.bucket}/files/sel.bin") as f:
        f.write(BitMap([1, 5, 99]).serialize())
    sel = spark.read.format(FORMAT).options(**lake.options) \
        .option("paimonSchema", "k INT, v STRING").option("selection", lake.url("files/sel.bin")) \
        .load(lake.url("files/part-1.row"))
    assert sorted(r[0] for r in sel.collect()) == [101, 105, 199]


def test_session_s3a_settings_and_the_driver_environment(spark, lake, table, monkeypatch):
    """Without paimon.s3.* options: the session's spark.hadoop.fs.s3a.*
    settings, which register() captures into the source's class, plan the
    read and travel in the reader to its tasks; else the driver's AWS_*
    variables. The source's methods are called here, as Spark's workers
    call them (a class registered anew starts new planning workers: 15 s
    of a 2-core machine)."""
    import pickle
    from pyspark import cloudpickle
    from pyspark.sql.datasource import CaseInsensitiveDict

    def scan(cls):
        source = cls(CaseInsensitiveDict({"path": table}))
        reader = source.reader(source.schema())
        parts = reader.partitions()
        reader = pickle.loads(cloudpickle.dumps(reader))    # as tasks get it
        assert sum(b.num_rows for p in parts for b in reader.read(p)) == N
        return reader.storage_options

    host = lake.server.endpoint.partition("://")[2]
    conf = {"spark.hadoop.fs.s3a.endpoint": host,           # no scheme: ssl says which
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
            "spark.hadoop.fs.s3a.access.key": "testing",
            "spark.hadoop.fs.s3a.secret.key": "testing",
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.endpoint.region": "us-east-1"}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        cls = configured(spark)
    finally:
        for k in conf:
            spark.conf.unset(k)
    want = {"s3.endpoint": f"http://{host}", "s3.access-key": "testing",
            "s3.secret-key": "testing", "s3.path.style.access": "true", "s3.region": "us-east-1"}
    assert cls.storage_conf == want
    assert scan(pickle.loads(cloudpickle.dumps(cls))) == want     # sent by value
    for k, v in lake.server.env().items():
        monkeypatch.setenv(k, v)
    assert scan(RowDataSource) == {**want, "s3.endpoint": lake.server.endpoint}


def test_a_scheme_nothing_serves_fails_before_any_task(spark, lake):
    from pyspark.errors import AnalysisException
    with pytest.raises(AnalysisException, match=r"cannot reach nosuch://b/t: no way to read or "
                                                r"write nosuch:// paths here"):
        spark.read.format(FORMAT).load("nosuch://b/t").collect()
    with pytest.raises(AnalysisException, match=r"cannot reach nosuch://b/t"):
        events(spark, n=3).write.format(FORMAT).mode("append").save("nosuch://b/t")
