#!/usr/bin/env python3
"""pypaimon baseline for the natslake primary-key write benchmark (bench/java-pk-write.bench.ts).

usage: pypaimon_pk_bench.py <warehouse> <rows> <buckets> [warm-up rows]

The rows are those of bench/shape.ts `benchUpsertRow` (and of Java's PaimonPk.java bench-write): the 6 columns of
pypaimon_bench.py's row i, except that `id` is the primary key and every tenth row (i % 10 == 9) updates the key of an
earlier row:

  id = i                                            when i % 10 != 9
  h  = ((i * 0x9E3779B1) mod 2^32) mod i            otherwise (a 32-bit multiplicative hash of i, below i)
  id = h - 1 if h % 10 == 9 else h

so n rows hold 0.9·n keys. The table, `bench.measured` in <warehouse>, has primary key `id` (NOT NULL), <buckets>
buckets, parquet + zstd (pypaimon's and Java's defaults, set explicitly); it is left in the warehouse for the caller
to read back. A warm-up run (default min(rows, 100000) rows, table `bench.warmup`) goes first and is not timed: it pays
pypaimon's lazy imports and first-use costs. pypaimon has no JIT, so a smaller warm-up warms what there is to warm.

Timed (wall: time.perf_counter, CPU: time.process_time, all threads of the process): new_batch_write_builder →
new_write → write_arrow(the whole Arrow table) → prepare_commit → commit → close, one commit — the span natslake's
BatchWriter.upsert run times (open, upsert, commit; Java's run times its table's creation too). Not timed: interpreter
start, imports, generating the rows and building the Arrow table (prepared before the clock starts, as Java's
GenericRow[] is), creating the table.

Prints one JSON line: {"rows", "keys" (distinct ids among the rows), "buckets", "warmup_rows", "write_s",
"write_cpu_s", "snapshot_id", "record_count" (the snapshot's totalRecordCount), "pypaimon", "pyarrow"}.
"""

import importlib.metadata
import json
import os
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pypaimon import CatalogFactory, Schema

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pypaimon_bench import generate as generate_rows, write_table  # noqa: E402

KEY_FIELD = pa.field("id", pa.int64(), nullable=False)


def upsert_keys(i):
    """bench/shape.ts benchUpsertKey over an int64 array of row indexes."""
    u = i.astype(np.uint64)
    h = ((u * np.uint64(0x9E3779B1)) & np.uint64(0xFFFFFFFF)) % np.maximum(u, np.uint64(1))
    h = np.where(h % np.uint64(10) == np.uint64(9), h - np.uint64(1), h).astype(np.int64)
    return np.where(i % 10 == 9, h, i)


def generate(n):
    """pypaimon_bench.py's rows with `id` the upsert key of each (NOT NULL: the primary key)."""
    return generate_rows(n).set_column(0, KEY_FIELD, pa.array(upsert_keys(np.arange(n, dtype=np.int64)), pa.int64()))


def create(catalog, name, buckets, schema):
    options = {"bucket": str(buckets), "file.format": "parquet", "file.compression": "zstd"}
    catalog.create_table(name, Schema.from_pyarrow_schema(schema, primary_keys=["id"], options=options), False)
    return catalog.get_table(name)


def main():
    if len(sys.argv) not in (4, 5):
        raise SystemExit("usage: pypaimon_pk_bench.py <warehouse> <rows> <buckets> [warm-up rows]")
    warehouse, rows, buckets = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    warmup_rows = int(sys.argv[4]) if len(sys.argv) == 5 else min(rows, 100_000)
    if rows < 10 or buckets < 1 or warmup_rows < 0:
        raise SystemExit("pypaimon_pk_bench: rows must be ≥ 10, buckets ≥ 1, warm-up rows ≥ 0")
    os.makedirs(warehouse, exist_ok=True)
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("bench", True)
    if warmup_rows > 0:
        warmup = generate(warmup_rows)
        write_table(create(catalog, "bench.warmup", buckets, warmup.schema), warmup)
    tbl = generate(rows)
    keys = pc.count_distinct(tbl.column("id")).as_py()
    table = create(catalog, "bench.measured", buckets, tbl.schema)

    t0, c0 = time.perf_counter(), time.process_time()
    write_table(table, tbl)
    write_s, write_cpu = time.perf_counter() - t0, time.process_time() - c0

    snap = table.snapshot_manager().get_latest_snapshot()
    print(json.dumps({"rows": rows, "keys": keys, "buckets": buckets, "warmup_rows": warmup_rows,
                      "write_s": round(write_s, 4), "write_cpu_s": round(write_cpu, 4),
                      "snapshot_id": snap.id if snap is not None else None,
                      "record_count": snap.total_record_count if snap is not None else None,
                      "pypaimon": importlib.metadata.version("pypaimon"), "pyarrow": pa.__version__},
                     separators=(",", ":")))


if __name__ == "__main__":
    main()
