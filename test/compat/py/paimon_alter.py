#!/usr/bin/env python3
"""Adds a nullable column to a Paimon table with pypaimon (schema evolution done by another engine).

usage: paimon_alter.py <warehouse> <db.table> <column> <ATOMIC TYPE, e.g. STRING>

Prints one JSON line: {"table":…, "schemaId": the table's schema id after the change}.
"""

import json
import sys

from pypaimon import CatalogFactory
from pypaimon.schema.data_types import AtomicType
from pypaimon.schema.schema_change import SchemaChange


def main():
    warehouse, ident, column, type_text = sys.argv[1:5]
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.alter_table(ident, [SchemaChange.add_column(column, AtomicType(type_text, True))])
    table = catalog.get_table(ident)
    print(json.dumps({"table": ident, "schemaId": table.table_schema.id}))


if __name__ == "__main__":
    main()
