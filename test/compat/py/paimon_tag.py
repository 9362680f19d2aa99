#!/usr/bin/env python3
"""Tags through pypaimon (the oracle side of test/integration/tags.test.ts).

usage: paimon_tag.py create <warehouse> <db.table> <name> [--snapshot N] [--time-retained 1d]
       paimon_tag.py read   <warehouse> <db.table> <name>     rows at the tag (scan.tag-name), one JSON object a line
       paimon_tag.py list   <warehouse> <db.table>            one JSON object a tag: name, snapshot, create time, retention

Rows are rendered like src/format/values.ts toJsonValue (paimon_json.py); `read` fails unless pypaimon's plan reports
the tagged snapshot's id (when the plan says which snapshot it read).
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from paimon_json import catalog_options, parse_json_type, render  # noqa: E402

from pypaimon import CatalogFactory  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description="pypaimon tags")
    ap.add_argument("command", choices=["create", "read", "list"])
    ap.add_argument("warehouse")
    ap.add_argument("table")
    ap.add_argument("name", nargs="?")
    ap.add_argument("--snapshot", type=int, default=None)
    ap.add_argument("--time-retained", default=None)
    args = ap.parse_args()

    catalog = CatalogFactory.create(catalog_options(args.warehouse))
    table = catalog.get_table(args.table)
    out = sys.stdout

    if args.command == "create":
        table.create_tag(args.name, snapshot_id=args.snapshot, time_retained=args.time_retained)
        tag = table.tag_manager().get(args.name)
        out.write(json.dumps({"name": args.name, "snapshot": tag.id}) + "\n")
    elif args.command == "list":
        for name in sorted(table.list_tags()):
            tag = table.tag_manager().get(name)
            out.write(json.dumps({
                "name": name,
                "snapshot": tag.id,
                "createTime": None if tag.tag_create_time is None else tag.tag_create_time.isoformat(),
                "timeRetainedSeconds": None if tag.tag_time_retained is None else tag.tag_time_retained.total_seconds(),
            }) + "\n")
    else:
        tag = table.tag_manager().get_or_throw(args.name)
        table = table.copy({"scan.tag-name": args.name})
        types = {f.name: parse_json_type(f.type.to_dict()) for f in table.table_schema.fields}
        rb = table.new_read_builder()
        plan = rb.new_scan().plan()
        got = getattr(plan, "snapshot_id", None)
        if got is not None and got != tag.id:
            raise SystemExit("paimon_tag: tag %s holds snapshot %d but pypaimon planned snapshot %s" % (args.name, tag.id, got))
        read = rb.new_read()
        for split in plan.splits():
            arrow = read.to_arrow([split])
            if arrow is None or arrow.num_rows == 0:
                continue
            names = arrow.schema.names
            for row in arrow.to_pylist():
                obj = {n: render(types[n], row[n]) for n in names}
                out.write(json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
