#!/usr/bin/env python3
"""The chaos verifier's independent file check: reads data files with pyarrow (not natslake's Parquet code).

stdin: a JSON list of {"path": ..., "column": "id"}. stdout: one JSON object per file, in input order:
{"path": ..., "ok": true, "rows": <footer row count>, "size": <bytes>, "ids": [<values of the column>]}
or {"path": ..., "ok": false, "error": "..."} when the file is missing or not readable Parquet.
"""

import json
import os
import sys

import pyarrow.parquet as pq


def main():
    files = json.load(sys.stdin)
    out = sys.stdout
    for f in files:
        path = f["path"]
        try:
            size = os.path.getsize(path)
            pf = pq.ParquetFile(path)
            rows = pf.metadata.num_rows
            col = pf.read(columns=[f["column"]]).column(0).to_pylist()
            if len(col) != rows:
                raise ValueError("read %d values but the footer says %d rows" % (len(col), rows))
            out.write(json.dumps({"path": path, "ok": True, "rows": rows, "size": size, "ids": col}) + "\n")
        except Exception as e:  # noqa: BLE001 - every failure is a finding, reported per file
            out.write(json.dumps({"path": path, "ok": False, "error": "%s: %s" % (type(e).__name__, e)}) + "\n")


if __name__ == "__main__":
    main()
