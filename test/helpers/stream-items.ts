/**
 * A TableStream read up to the table's latest snapshot and no further: its items until no snapshot left up to the
 * latest delivers rows — `next()` would otherwise wait for a snapshot that never comes (a COMPACT snapshot without
 * changelog, say, as the last one).
 */
import { deliversRows } from "../../src/scan/incremental.ts";
import { TableStream, type ScanMode, type StreamItem } from "../../src/scan/table-stream.ts";
import type { Table } from "../../src/table/table.ts";

export async function* streamToLatest(t: Table, mode: ScanMode): AsyncGenerator<StreamItem> {
  const stream = new TableStream(t, { mode, pollMs: 20 });
  const latest = (await t.snapshots.latestId()) ?? 0;
  // A -full start's first item is the table at its snapshot, whatever that snapshot delivers as a delta.
  let fullPending = mode.mode.endsWith("-full");
  try {
    for (;;) {
      await stream.prepare();
      if (!fullPending && !(await rowsAhead(t, stream.nextSnapshotId ?? latest + 1, latest))) return;
      fullPending = false;
      const item = await stream.next();
      if (item === null) return;
      yield item;
    }
  } finally {
    stream.close();
  }
}

async function rowsAhead(t: Table, from: number, latest: number): Promise<boolean> {
  for (let id = from; id <= latest; id++) if (deliversRows(t, await t.snapshots.snapshot(id))) return true;
  return false;
}
