#!/usr/bin/env python3
"""Writes rows into a Paimon table with pypaimon (the oracle writer of compat tests).

usage: paimon_write.py < spec.json

spec = {
  "warehouse": "/path/to/wh",
  "table": "db.t",
  "create": {"columns": [["id", "BIGINT NOT NULL"], ["amount", "DECIMAL(10, 2)"], ...],
             "partitionKeys": ["dt"], "primaryKeys": [], "options": {"bucket": "2", "bucket-key": "id"}} | null,
  "batches": [[row, ...], ...],        each batch = one pypaimon batch write + commit = one snapshot
  "overwrite": {"dt": "2024-01-01"} | {} | null     INSERT OVERWRITE of that partition ({} = whole table)
}

Column types are Paimon SQL type strings (nested ARRAY/MAP/ROW too). Rows are JSON objects in the rendering of
src/format/values.ts toJsonValue: decimals as strings, dates 'YYYY-MM-DD', timestamps ISO-8601, bytes base64, BIGINT as
number or decimal string, NaN/Infinity as strings (see paimon_json.py from_json). With "create", the database is
created when missing and the table must not exist yet.

Prints one JSON line: {"table":…, "created":bool, "rows":N, "snapshots":[ids created, in order], "latestSnapshot":id}.
"""

import decimal
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from paimon_json import (catalog_options, from_json, parse_json_type, parse_sql_type, partition_literal,  # noqa: E402
                         type_to_json)

import pyarrow as pa  # noqa: E402
from pypaimon import CatalogFactory, Schema  # noqa: E402
from pypaimon.schema.data_types import AtomicInteger, DataTypeParser, PyarrowFieldParser  # noqa: E402


def latest_snapshot_id(table):
    snap = table.snapshot_manager().get_latest_snapshot()
    return snap.id if snap is not None else None


def create_table(catalog, ident, create):
    db = ident.split(".", 1)[0]
    catalog.create_database(db, True)
    field_id = AtomicInteger(-1)
    fields = []
    for col in create["columns"]:
        name, type_text = col[0], col[1]
        t = parse_sql_type(type_text)
        fields.append(DataTypeParser.parse_data_field({"name": name, "type": type_to_json(t)}, field_id))
    schema = Schema(
        fields,
        list(create.get("partitionKeys") or []),
        list(create.get("primaryKeys") or []),
        {str(k): str(v) for k, v in (create.get("options") or {}).items()},
    )
    catalog.create_table(ident, schema, False)


def main():
    spec = json.loads(sys.stdin.buffer.read().decode("utf-8"), parse_float=decimal.Decimal)
    warehouse, ident = spec["warehouse"], spec["table"]
    catalog = CatalogFactory.create(catalog_options(warehouse))
    create = spec.get("create")
    if create:
        create_table(catalog, ident, create)

    table = catalog.get_table(ident)
    fields = table.table_schema.fields
    types = [(f.name, parse_json_type(f.type.to_dict())) for f in fields]
    arrow_schema = PyarrowFieldParser.from_paimon_schema(fields)
    known = {n for n, _ in types}

    overwrite = spec.get("overwrite")
    static_partition = None
    if overwrite is not None:
        type_of = dict(types)
        static_partition = {}
        for k, v in overwrite.items():
            if k not in type_of:
                raise SystemExit("paimon_write: overwrite key %r is not a column of %s" % (k, ident))
            static_partition[k] = None if v is None else partition_literal(type_of[k], str(v), k)

    created = []
    total = 0
    for b, batch in enumerate(spec.get("batches") or []):
        rows = []
        for i, row in enumerate(batch):
            extra = set(row) - known
            if extra:
                raise SystemExit("paimon_write: batch %d row %d has unknown columns %s" % (b, i, sorted(extra)))
            rows.append({n: from_json(t, row.get(n), arrow_schema.field(n).type, "batch %d row %d column %s" % (b, i, n))
                         for n, t in types})
        arrow = pa.Table.from_pylist(rows, schema=arrow_schema)
        before = latest_snapshot_id(table)
        builder = table.new_batch_write_builder()
        if static_partition is not None:
            builder.overwrite(static_partition)
        writer, committer = builder.new_write(), builder.new_commit()
        try:
            writer.write_arrow(arrow)
            committer.commit(writer.prepare_commit())
        finally:
            writer.close()
            committer.close()
        after = latest_snapshot_id(table)
        if after is not None and after != before:
            created.extend(range((before or 0) + 1, after + 1))
        total += len(rows)

    summary = {"table": ident, "created": bool(create), "rows": total, "snapshots": created,
               "latestSnapshot": latest_snapshot_id(table)}
    sys.stdout.write(json.dumps(summary, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
