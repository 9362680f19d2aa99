#!/usr/bin/env python3
"""Time-travel reads with pypaimon, many in one process (the oracle side of test/compat/time-travel-schemas.test.ts).

usage: paimon_time_travel.py <warehouse> <db.table>   < JSON list of reads on stdin

A read is {"snapshot": N} (scan.snapshot-id), {"tag": NAME} (scan.tag-name), {"atMillis": T}
(scan.timestamp-millis) or {} (the latest snapshot, no time travel), with an optional "columns": [...] projection.
Output: one JSON line per read, in order: {"fields": [{"name":.., "type": the type as the schema file writes it}],
"rows": [...]} — the columns of the table pypaimon's time travel gives (its schema) and its rows, rendered like
src/format/values.ts toJsonValue (paimon_json.py) — or {"error": "..."} when pypaimon refuses the read.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from paimon_json import catalog_options, parse_json_type, render  # noqa: E402

from pypaimon import CatalogFactory  # noqa: E402

OPTIONS = {"snapshot": "scan.snapshot-id", "tag": "scan.tag-name", "atMillis": "scan.timestamp-millis"}


def read(catalog, ident, request):
    table = catalog.get_table(ident)
    travel = {OPTIONS[k]: str(v) for k, v in request.items() if k in OPTIONS}
    if travel:
        table = table.copy(travel)
    by_name = {f.name: f for f in table.table_schema.fields}
    columns = request.get("columns")
    fields = [by_name[c] for c in columns] if columns else list(table.table_schema.fields)
    types = {f.name: parse_json_type(f.type.to_dict()) for f in fields}
    rb = table.new_read_builder()
    if columns:
        rb = rb.with_projection(columns)
    read = rb.new_read()
    rows = []
    for split in rb.new_scan().plan().splits():
        arrow = read.to_arrow([split])
        if arrow is None:
            continue
        for row in arrow.to_pylist():
            rows.append({n: render(types[n], row[n]) for n in arrow.schema.names})
    return {"fields": [{"name": f.name, "type": f.type.to_dict()} for f in fields], "rows": rows}


def main():
    warehouse, ident = sys.argv[1:3]
    catalog = CatalogFactory.create(catalog_options(warehouse))
    out = sys.stdout
    for request in json.loads(sys.stdin.read()):
        try:
            result = read(catalog, ident, request)
        except Exception as e:  # noqa: BLE001 - the refusal is the answer, reported per read
            result = {"error": "%s: %s" % (type(e).__name__, e)}
        out.write(json.dumps(result, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
