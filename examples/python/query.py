#!/usr/bin/env python3
"""Queries a natslake table from Python without Flink or Spark: pypaimon reads the Paimon table from the warehouse
into Arrow, DuckDB runs SQL over that Arrow table, and the result is printed.

usage: query.py [--warehouse .natslake/warehouse] [--table demo.events] [--sql "SELECT ..."] [--snapshot N]

Run it in the repository folder (while `npm run up` runs, or after: the table is files in the warehouse), with a
Python that has the packages of examples/python/requirements.txt (the checkout's .venv, which scripts/setup.sh
makes, has them):

  .venv/bin/python examples/python/query.py --table demo.events

--warehouse defaults to the one `npm run up` keeps (.natslake/warehouse in the repository folder). In --sql the
table is `t`; the default query counts the rows and ids and the ids' range (columns the demo table has):

  SELECT count(*) AS rows, count(DISTINCT id) AS ids, min(id) AS min_id, max(id) AS max_id FROM t

Reads the latest snapshot, or --snapshot N (time travel). Exit 1 when the table cannot be read (no such table or
warehouse), 2 when DuckDB refuses the query.
"""

import argparse
import decimal
import os
import sys
import time

import duckdb
from pypaimon import CatalogFactory

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_SQL = "SELECT count(*) AS rows, count(DISTINCT id) AS ids, min(id) AS min_id, max(id) AS max_id FROM t"


def read_table(warehouse, name, snapshot):
    """The table's rows as one Arrow table, and the snapshot they are from."""
    table = CatalogFactory.create({"warehouse": warehouse}).get_table(name)
    if snapshot is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot)})
    read_builder = table.new_read_builder()
    plan = read_builder.new_scan().plan()
    latest = table.snapshot_manager().get_latest_snapshot()
    return read_builder.new_read().to_arrow(plan.splits()), snapshot if snapshot is not None else (latest.id if latest else None)


def print_result(result):
    """Columns under their names, as plain text: numbers to the right, the rest to the left."""
    names = [c[0] for c in result.description]
    values = result.fetchall()
    rows = [["NULL" if v is None else str(v) for v in r] for r in values]
    widths = [max([len(n)] + [len(r[i]) for r in rows]) for i, n in enumerate(names)]
    numeric = [all(isinstance(r[i], (int, float, decimal.Decimal)) or r[i] is None for r in values) for i in range(len(names))]
    print("  ".join(n.rjust(w) if num else n.ljust(w) for n, w, num in zip(names, widths, numeric)).rstrip())
    for r in rows:
        print("  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(r, widths, numeric)).rstrip())


def main() -> int:
    ap = argparse.ArgumentParser(description="Query a natslake table with pypaimon and DuckDB.")
    ap.add_argument("--warehouse", default=os.path.join(REPO, ".natslake", "warehouse"),
                    help="the warehouse directory (default: the one `npm run up` keeps, .natslake/warehouse)")
    ap.add_argument("--table", default="demo.events", help="<db>.<table> (default demo.events)")
    ap.add_argument("--sql", default=DEFAULT_SQL, help="the query; the table is `t`")
    ap.add_argument("--snapshot", type=int, default=None, help="read this snapshot instead of the latest")
    a = ap.parse_args()

    started = time.monotonic()
    try:
        t, snapshot = read_table(a.warehouse, a.table, a.snapshot)
    except Exception as e:  # pypaimon's errors for a missing table or warehouse are of several types
        print(f"query.py: cannot read {a.table} in {a.warehouse}: {e}", file=sys.stderr)
        return 1
    read_ms = (time.monotonic() - started) * 1000
    at = f"snapshot {snapshot}" if snapshot is not None else "no snapshot yet"
    print(f"read {t.num_rows} rows of {a.table} ({at}) with pypaimon in {read_ms:.0f} ms")
    con = duckdb.connect()
    con.register("t", t)
    try:
        result = con.execute(a.sql)
    except duckdb.Error as e:
        print(f"query.py: DuckDB refused the query: {e}", file=sys.stderr)
        return 2
    print_result(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
