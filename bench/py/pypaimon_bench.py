#!/usr/bin/env python3
"""pypaimon baseline for the natslake table-core benchmark.

usage: pypaimon_bench.py <workdir> <rows>

The data is the 6-column shape of /work/shared/perf-notes.md, generated deterministically so the TypeScript bench
(bench/table-core.bench.ts) can build exactly the same rows. For row i (0-based):

  column   Paimon type     Arrow type       value
  id       BIGINT          int64            i
  ts       TIMESTAMP(3)    timestamp[ms]    1700000000000 + i   (epoch millis)
  user     STRING          string           'user-' + zero-padded 6 digits of (i * 7919 % 100000), e.g. 'user-007919'
  event    STRING          string           EVENTS[i % 10]
  amount   DOUBLE          float64          (i % 1000) * 0.25
  qty      INT             int32            i % 100

  EVENTS = click, view, buy, cart, login, logout, search, share, like, comment

All columns nullable, no nulls. The table is an unaware-bucket append table: bucket=-1, file.format=parquet,
file.compression=zstd, no partitions.

Measured (median of 3 runs, each in a fresh warehouse; data generation and table creation excluded):
  pypaimon_write_s  new_batch_write_builder → write_arrow(whole table) → prepare_commit → commit
  pypaimon_scan_s   new_read_builder → plan().splits() → to_arrow(splits)   (row count checked)
  pyarrow_write_s   pyarrow.parquet.write_table(tbl, path, compression='zstd')   (the native floor)

Prints one JSON line: {"rows":N,"pypaimon_write_s":…,"pypaimon_scan_s":…,"pyarrow_write_s":…} and the same with
"_cpu_s": process CPU time (all threads) of each step, which a busy machine distorts less than wall time.
"""

import json
import os
import shutil
import statistics
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pypaimon import CatalogFactory, Schema

EVENTS = ["click", "view", "buy", "cart", "login", "logout", "search", "share", "like", "comment"]
TS_BASE_MS = 1_700_000_000_000
RUNS = 3

SCHEMA = pa.schema([
    ("id", pa.int64()),
    ("ts", pa.timestamp("ms")),
    ("user", pa.string()),
    ("event", pa.string()),
    ("amount", pa.float64()),
    ("qty", pa.int32()),
])
OPTIONS = {"bucket": "-1", "file.format": "parquet", "file.compression": "zstd"}


def generate(n):
    i = np.arange(n, dtype=np.int64)
    user_num = pc.cast(pa.array((i * 7919) % 100000), pa.string())
    user = pc.binary_join_element_wise("user-", pc.utf8_lpad(user_num, 6, "0"), "")
    event = pa.array(EVENTS, pa.string()).take(pa.array(i % 10))
    columns = [
        pa.array(i, pa.int64()),
        pa.array(TS_BASE_MS + i, pa.int64()).cast(pa.timestamp("ms")),
        user,
        event,
        pa.array((i % 1000) * 0.25, pa.float64()),
        pa.array((i % 100).astype(np.int32), pa.int32()),
    ]
    return pa.Table.from_arrays(columns, schema=SCHEMA)


def write_table(table, tbl):
    """One batch write of the Arrow table `tbl` into `table`, one commit (what the benchmarks time)."""
    builder = table.new_batch_write_builder()
    writer, committer = builder.new_write(), builder.new_commit()
    try:
        writer.write_arrow(tbl)
        committer.commit(writer.prepare_commit())
    finally:
        writer.close()
        committer.close()


def one_run(run_dir, tbl):
    if os.path.exists(run_dir):
        shutil.rmtree(run_dir)
    os.makedirs(run_dir)
    catalog = CatalogFactory.create({"warehouse": os.path.join(run_dir, "wh")})
    catalog.create_database("bench", True)
    catalog.create_table("bench.events", Schema.from_pyarrow_schema(SCHEMA, options=OPTIONS), False)
    table = catalog.get_table("bench.events")

    t0, c0 = time.perf_counter(), time.process_time()
    write_table(table, tbl)
    write_s, write_cpu = time.perf_counter() - t0, time.process_time() - c0

    t0, c0 = time.perf_counter(), time.process_time()
    rb = table.new_read_builder()
    splits = rb.new_scan().plan().splits()
    back = rb.new_read().to_arrow(splits)
    scan_s, scan_cpu = time.perf_counter() - t0, time.process_time() - c0
    got = back.num_rows if back is not None else 0
    if got != tbl.num_rows:
        raise SystemExit("pypaimon_bench: scanned %d rows, wrote %d" % (got, tbl.num_rows))

    t0, c0 = time.perf_counter(), time.process_time()
    pq.write_table(tbl, os.path.join(run_dir, "native.parquet"), compression="zstd")
    native_s, native_cpu = time.perf_counter() - t0, time.process_time() - c0
    return write_s, scan_s, native_s, write_cpu, scan_cpu, native_cpu


def workdir_and_rows(script):
    """The `<workdir> <rows>` arguments every bench script here takes; the workdir is made."""
    if len(sys.argv) != 3:
        raise SystemExit("usage: %s.py <workdir> <rows>" % script)
    workdir, rows = sys.argv[1], int(sys.argv[2])
    if rows <= 0:
        raise SystemExit("%s: rows must be positive" % script)
    os.makedirs(workdir, exist_ok=True)
    return workdir, rows


def main():
    workdir, rows = workdir_and_rows("pypaimon_bench")
    tbl = generate(rows)
    results = []
    for k in range(RUNS):
        run_dir = os.path.join(workdir, "pypaimon-run-%d" % k)
        results.append(one_run(run_dir, tbl))
        shutil.rmtree(run_dir, ignore_errors=True)
    med = [round(statistics.median(r[j] for r in results), 4) for j in range(6)]
    print(json.dumps({"rows": rows, "pypaimon_write_s": med[0], "pypaimon_scan_s": med[1], "pyarrow_write_s": med[2],
                      "pypaimon_write_cpu_s": med[3], "pypaimon_scan_cpu_s": med[4], "pyarrow_write_cpu_s": med[5]},
                     separators=(",", ":")))


if __name__ == "__main__":
    main()
