#!/usr/bin/env python3
"""pyarrow's part of the cluster benchmark's ingest floor (bench/cluster.bench.ts, issue 28).

usage: pyarrow_write_floor.py <workdir> <rows>

Writes the rows of the benchmark shape (pypaimon_bench.py's `generate`: the same rows the cluster's load generator
publishes) with pyarrow.parquet.write_table under the settings natslake's data files use (src/codec/parquet.ts):
ZSTD level 1, no dictionary, column-chunk statistics only (no page index), data page v1, row groups of at most
131,072 rows (src/write/data-file-writer.ts MAX_ROW_GROUP_ROWS). Building the Arrow table is not timed: the floor's
other part (the raw consume + decode) builds the columns.

Prints one JSON line: {"rows":N,"runs":R,"pyarrow_write_s":…,"pyarrow_write_cpu_s":…} — medians over R runs of
wall time and process CPU time (all threads).
"""

import json
import os
import statistics
import time

import pyarrow.parquet as pq

from pypaimon_bench import generate, workdir_and_rows

RUNS = 3
MAX_ROW_GROUP_ROWS = 131_072


def main():
    workdir, rows = workdir_and_rows("pyarrow_write_floor")
    tbl = generate(rows)
    path = os.path.join(workdir, "floor.parquet")
    wall, cpu = [], []
    for _ in range(RUNS):
        t0, c0 = time.perf_counter(), time.process_time()
        pq.write_table(tbl, path, compression="zstd", compression_level=1, use_dictionary=False, write_statistics=True,
                       write_page_index=False, data_page_version="1.0", row_group_size=MAX_ROW_GROUP_ROWS)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        written = pq.ParquetFile(path).metadata.num_rows
        os.remove(path)
        if written != rows:
            raise SystemExit("pyarrow_write_floor: wrote %d rows, expected %d" % (written, rows))
    print(json.dumps({"rows": rows, "runs": RUNS, "pyarrow_write_s": round(statistics.median(wall), 4),
                      "pyarrow_write_cpu_s": round(statistics.median(cpu), 4)}, separators=(",", ":")))


if __name__ == "__main__":
    main()
