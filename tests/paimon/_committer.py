"""A writer process of tests/paimon/test_object_store_commits.py: appends
``rows`` rows per round to one S3 table, each round's commit started
together with the other writers' at a barrier. Spawned: it shares nothing
with the test's process but what it is given."""
import os


def append_rounds(env: dict, catalog: dict, writer: int, rounds: int, rows: int, barrier,
                  accelerate: bool) -> list:
    os.environ.update(env)
    import pyarrow as pa
    from pypaimon import CatalogFactory
    import rowformat.paimon as rp
    if accelerate:
        rp.accelerate()
    table = CatalogFactory.create(catalog).get_table("db.t")
    errors = []
    for r in range(rounds):
        data = pa.table({"writer": pa.array([writer] * rows, pa.int32()),
                         "round": pa.array([r] * rows, pa.int32()),
                         "i": pa.array(range(rows), pa.int32())})
        wb = table.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(data)
        messages = w.prepare_commit()
        barrier.wait(timeout=120)
        try:
            c.commit(messages)
        except Exception as e:     # reported, not hidden: the test fails on it
            errors.append(f"{type(e).__name__}: {e}")
        finally:
            w.close()
            c.close()
    return errors
