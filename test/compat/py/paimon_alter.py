#!/usr/bin/env python3
"""Changes a Paimon table's schema with pypaimon (schema evolution done by another engine).

usage: paimon_alter.py <warehouse> <db.table> <column> <ATOMIC TYPE, e.g. STRING>     adds a nullable column
       paimon_alter.py <warehouse> <db.table> --rename <column> <new name>
       paimon_alter.py <warehouse> <db.table> --drop <column>
       paimon_alter.py <warehouse> <db.table> --type <column> <ATOMIC TYPE>            e.g. INT to BIGINT

Prints one JSON line: {"table":…, "schemaId": the table's schema id after the change}.
"""

import json
import sys

from pypaimon import CatalogFactory
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange


def change_of(args):
    if args[0] == "--rename" and len(args) == 3:
        return SchemaChange.rename_column(args[1], args[2])
    if args[0] == "--drop" and len(args) == 2:
        return SchemaChange.drop_column(args[1])
    if args[0] == "--type" and len(args) == 3:
        return SchemaChange.update_column_type(args[1], AtomicType(args[2], True), keep_nullability=True)
    if len(args) == 2 and not args[0].startswith("--"):
        return SchemaChange.add_column(args[0], AtomicType(args[1], True))
    raise SystemExit("paimon_alter: cannot read the change %r (see the usage in the docstring)" % (args,))


def main():
    warehouse, ident = sys.argv[1:3]
    change = change_of(sys.argv[3:])
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.alter_table(ident, [change])
    table = catalog.get_table(ident)
    print(json.dumps({"table": ident, "schemaId": table.table_schema.id}))


if __name__ == "__main__":
    main()
