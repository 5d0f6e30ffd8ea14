"""A driver that streams a directory of Parquet files (one per micro-batch)
into a paimon-row table: ``run`` keeps going (1 s triggers) until it is
killed, ``finish`` stops once every file is in (availableNow).
test_streaming_kills.py SIGKILLs it around its commits and restarts it."""
import os
import sys

os.environ["PYSPARK_PYTHON"] = sys.executable

from pyspark.sql import SparkSession  # noqa: E402

from tests.spark.conftest import FAST_CONF  # noqa: E402


def main(mode, source, table, checkpoint):
    builder = SparkSession.builder.master("local[2]")
    for k, v in FAST_CONF.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.readStream.schema("id long, v string").option("maxFilesPerTrigger", 1) \
        .parquet(source)
    w = df.writeStream.format("paimon-row").option("checkpointLocation", checkpoint)
    w = w.trigger(availableNow=True) if mode == "finish" else w.trigger(processingTime="1 second")
    q = w.start(table)
    q.awaitTermination(600)
    if q.exception() is not None:
        raise q.exception()
    print("FINISHED", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
