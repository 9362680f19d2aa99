"""Prints the byte range of every column chunk of a Parquet file, as pyarrow reads its footer: one JSON line per
chunk, {"column", "rowGroup", "start", "end"} (start: the dictionary page if any, else the first data page)."""
import json
import sys

import pyarrow.parquet as pq

meta = pq.ParquetFile(sys.argv[1]).metadata
for g in range(meta.num_row_groups):
    rg = meta.row_group(g)
    for c in range(rg.num_columns):
        col = rg.column(c)
        start = col.data_page_offset
        if col.has_dictionary_page and col.dictionary_page_offset is not None and col.dictionary_page_offset > 0:
            start = min(start, col.dictionary_page_offset)
        print(json.dumps({"column": col.path_in_schema.split(".")[0], "rowGroup": g, "start": start, "end": start + col.total_compressed_size}))
