#!/usr/bin/env python3
"""Reads a Paimon table with pypaimon and prints one JSON object per row (the oracle side of compat tests).

usage: paimon_read.py <warehouse> <db.table> [--snapshot N] [--columns a,b] [--with-bucket] [--partition k=v,...]
                     [--filter-stdin]

  --snapshot N      time travel: read snapshot N (pypaimon option scan.snapshot-id); fails unless pypaimon's plan
                    reports exactly that snapshot
  --columns a,b     projection, in that order
  --with-bucket     add "_bucket" (the split's bucket) and "_partition" ("k=v/k2=v2", "" when unpartitioned; values
                    rendered like the columns, null as the table's partition.default-name) to every row
  --partition k=v   only these partitions (pushed to pypaimon as a partition filter; every returned split is then
                    checked to match, so a bad pushdown shows up as an error rather than extra rows)
  --filter-stdin    a value filter pushed to pypaimon (with_filter: it skips files by their value statistics, then
                    filters rows), read from stdin as JSON: [[op, column, literal], ...] ANDed, op one of equal,
                    less_than, less_or_equal, greater_than, greater_or_equal (stdin, since a literal may be larger
                    than a command-line argument may be)

Rows come split by split in pypaimon's plan order, and within a split in the order pypaimon reads its files.
Values are rendered like src/format/values.ts toJsonValue (see paimon_json.py). Output is UTF-8 JSON lines.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from paimon_json import (catalog_options, parse_json_type, parse_partition_spec, partition_literal, render,  # noqa: E402
                         render_partition_value)

from pypaimon import CatalogFactory  # noqa: E402
from pypaimon.common.predicate_builder import PredicateBuilder  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description="Read a Paimon table with pypaimon as JSON lines")
    ap.add_argument("warehouse")
    ap.add_argument("table", help="db.table")
    ap.add_argument("--snapshot", type=int, default=None)
    ap.add_argument("--columns", default=None, help="comma-separated projection")
    ap.add_argument("--with-bucket", action="store_true")
    ap.add_argument("--partition", default=None, help="k=v[,k=v...]")
    ap.add_argument("--filter-stdin", action="store_true")
    args = ap.parse_args()

    catalog = CatalogFactory.create(catalog_options(args.warehouse))
    table = catalog.get_table(args.table)
    if args.snapshot is not None:
        if table.snapshot_manager().get_snapshot_by_id(args.snapshot) is None:
            raise SystemExit("paimon_read: snapshot %d of %s does not exist" % (args.snapshot, args.table))
        table = table.copy({"scan.snapshot-id": str(args.snapshot)})

    # Types come from the (possibly time-travelled) schema, in the schema-file JSON form.
    fields = table.table_schema.fields
    types = {f.name: parse_json_type(f.type.to_dict()) for f in fields}
    partition_keys = list(table.partition_keys or [])
    default_part = table.table_schema.options.get("partition.default-name", "__DEFAULT_PARTITION__")

    rb = table.new_read_builder()
    wanted_partition = None
    if args.partition:
        wanted_partition = parse_partition_spec(args.partition)
        pb = PredicateBuilder(fields)
        preds = []
        for k, v in wanted_partition:
            if k not in partition_keys:
                raise SystemExit("paimon_read: %r is not a partition key of %s (keys: %s)" % (k, args.table, partition_keys))
            if v == default_part:
                preds.append(pb.is_null(k))
            else:
                typed = partition_literal(types[k], v, k)
                preds.append(pb.equal(k, typed))
        rb = rb.with_partition_filter(PredicateBuilder.and_predicates(preds))
    if args.filter_stdin:
        pb = PredicateBuilder(fields)
        ops = {"equal": pb.equal, "less_than": pb.less_than, "less_or_equal": pb.less_or_equal,
               "greater_than": pb.greater_than, "greater_or_equal": pb.greater_or_equal}
        conds = json.loads(sys.stdin.buffer.read().decode("utf-8"))
        preds = []
        for op, col, literal in conds:
            if op not in ops or col not in types:
                raise SystemExit("paimon_read: bad filter %r %r" % (op, col))
            preds.append(ops[op](col, literal))
        rb = rb.with_filter(PredicateBuilder.and_predicates(preds))
    if args.columns:
        columns = [c for c in args.columns.split(",") if c]
        for c in columns:
            if c not in types:
                raise SystemExit("paimon_read: no column %r in %s" % (c, args.table))
        rb = rb.with_projection(columns)

    plan = rb.new_scan().plan()
    if args.snapshot is not None:
        got = getattr(plan, "snapshot_id", None)
        if got is not None and got != args.snapshot:
            raise SystemExit("paimon_read: asked for snapshot %d but pypaimon planned snapshot %s" % (args.snapshot, got))
    splits = plan.splits()
    read = rb.new_read()
    out = sys.stdout.buffer
    for split in splits:
        partition_text = ""
        if args.with_bucket or wanted_partition is not None:
            values = list(split.partition.values) if partition_keys else []
            rendered = [render_partition_value(types[k], v, default_part) for k, v in zip(partition_keys, values)]
            partition_text = "/".join("%s=%s" % kv for kv in zip(partition_keys, rendered))
            if wanted_partition is not None:
                got = dict(zip(partition_keys, rendered))
                for k, v in wanted_partition:
                    if got.get(k) != v:
                        raise SystemExit("paimon_read: partition filter %s returned split of partition %s"
                                         % (args.partition, partition_text))
        arrow = read.to_arrow([split])
        if arrow is None or arrow.num_rows == 0:
            continue
        names = arrow.schema.names
        col_types = [types[n] for n in names]
        lines = []
        for row in arrow.to_pylist():
            obj = {n: render(t, row[n]) for n, t in zip(names, col_types)}
            if args.with_bucket:
                obj["_bucket"] = split.bucket
                obj["_partition"] = partition_text
            lines.append(json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False))
        out.write(("\n".join(lines) + "\n").encode("utf-8"))
    out.flush()


if __name__ == "__main__":
    main()
