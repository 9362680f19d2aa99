/**
 * `natslake tail <db.table> [--from latest|full|snapshot:N|snapshot-full:N|time:T] [--consumer-id ID]
 * [--format jsonl|table]`: prints a table's rows as they land. Two ways to read them:
 * - with `--nats` and no `--warehouse`: through a reader node, over the consume protocol (cluster/consumer.ts) —
 *   the tail needs no access to the warehouse; the columns' types come from the cluster's describe-table;
 * - with a warehouse (`--warehouse` or NATSLAKE_WAREHOUSE): it reads the table itself (src/scan/table-stream.ts),
 *   woken by the cluster's snapshot notifications with `--nats` (no polling delay), else looking at the snapshot
 *   chain every `--poll`.
 * With a consumer id it records its progress after printing each snapshot's rows (Paimon's consumer file), so a
 * restarted tail resumes at the first snapshot it did not finish printing, and snapshot expiration keeps what it
 * still has to read. `--max-snapshots` / `--for` bound a run (scripts, tests); Ctrl-C stops it after the snapshot
 * being printed.
 */
import { Option, type Command } from "commander";
import type { NatsConnection } from "@nats-io/transport-node";
import { recordBatchToRows } from "../../src/codec/columns/batch-to-rows.ts";
import { ROW_KIND_FIELD } from "../../src/lsm/row-kind-column.ts";
import { ErrorKind, LakeError } from "../../src/errors.ts";
import { parseSqlType, type DataType } from "../../src/format/data-types.ts";
import { parsePartitionSpec } from "../../src/format/partition.ts";
import { toJsonText, toJsonValue, type Row } from "../../src/format/values.ts";
import { parseIdentifier } from "../../src/table/catalog.ts";
import { readRows } from "../../src/scan/read.ts";
import { parseScanMode, TableStream, type ScanMode, type StreamItem } from "../../src/scan/table-stream.ts";
import type { Table } from "../../src/table/table.ts";
import { subscribeSnapshots, type SnapshotSubscription } from "../snapshots-client.ts";
import { adminRequest } from "../admin-client.ts";
import { openConsumer, type Consumer } from "../consumer.ts";
import { DEFAULT_PREFIX } from "../nats/subjects.ts";
import { catalogFrom, connectOrExplain, durationArg, parsePositiveInt, renderTable, UsageError, type WarehouseOpts, WAREHOUSE_FLAG, WAREHOUSE_HELP } from "./common.ts";

interface TailOpts extends WarehouseOpts {
  from: ScanMode;
  consumerId?: string;
  format: string;
  columns?: string;
  partition?: string;
  nats?: string;
  prefix: string;
  poll: number;
  maxSnapshots?: number;
  for?: number;
  withSnapshotId?: boolean;
}

const scanModeArg = (v: string): ScanMode => {
  try {
    return parseScanMode(v);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
};

export function registerTailCommand(program: Command, out: (s: string) => void): void {
  program
    .command("tail <table>")
    .description("print rows as they land: a starting scan by --from, then every new snapshot's rows, in order")
    .addOption(
      new Option("--from <mode>", "latest (only what lands from now), full (the table now, then what lands), snapshot:N, snapshot-full:N or time:T")
        .argParser(scanModeArg)
        // Shown as the word a user types, not as the parsed object.
        .default({ mode: "latest" } as ScanMode, "latest"),
    )
    .option("--consumer-id <id>", "resume where this consumer stopped, and record its progress after each snapshot")
    .option("--format <jsonl|table>", "output format", "jsonl")
    .option("--columns <cols>", "comma-separated columns to print")
    .option("--partition <k=v,...>", "only this partition")
    .option("--nats <url>", "without --warehouse: read through a reader node (no warehouse access needed); with one: be woken by the cluster's snapshot notifications (else the snapshot chain is polled)")
    .option("--prefix <p>", "the cluster's subject prefix", DEFAULT_PREFIX)
    .option("--poll <duration>", "how often to look for a new snapshot without a notification", durationArg, 1000)
    .option("--max-snapshots <n>", "stop after printing this many snapshots", parsePositiveInt("--max-snapshots"))
    .option("--for <duration>", "stop after this long", durationArg)
    .option("--with-snapshot-id", "jsonl: add `_snapshot` (the snapshot that delivered the row) to every line, to de-duplicate by")
    .option(WAREHOUSE_FLAG, WAREHOUSE_HELP)
    .addHelpText("after", "\nExamples:\n  natslake tail shop.orders --nats nats://127.0.0.1:4222                  # through a reader node\n  natslake tail shop.orders --nats nats://127.0.0.1:4222 --warehouse /wh  # the warehouse, woken by notifications\n  natslake tail shop.orders --from full --consumer-id audit --format table\n  natslake tail shop.orders --from time:2026-12-01T10:00:00Z --max-snapshots 10\n")
    .action(async (name: string, o: TailOpts) => {
      if (o.format !== "jsonl" && o.format !== "table") throw new UsageError(`--format must be jsonl or table, got '${o.format}'`);
      if (o.nats !== undefined && (o.warehouse ?? process.env["NATSLAKE_WAREHOUSE"]) === undefined) return tailThroughReader(name, o, out);
      const table = await catalogFrom(o, { mustExist: true }).getTable(parseIdentifier(name));
      const projection = o.columns?.split(",").map((c) => c.trim()).filter(Boolean);
      if (projection) for (const c of projection) table.typeOf(c); // an unknown column is an error now, not at the first row
      const partition = o.partition ? parsePartitionSpec(o.partition, table.partitionKeys, table.partitionTypes) : undefined;
      const stream = new TableStream(table, { mode: o.from, ...(o.consumerId !== undefined ? { consumerId: o.consumerId } : {}), pollMs: o.poll });
      let nc: NatsConnection | null = null;
      let sub: SnapshotSubscription | null = null;
      const stop = (): void => stream.close();
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
      const timer = o.for !== undefined ? setTimeout(stop, o.for) : null;
      try {
        if (o.nats !== undefined) {
          nc = await connectOrExplain({ ...o, nats: o.nats }, { name: "natslake-tail" });
          sub = await subscribeSnapshots(nc, table.identifier, (n) => stream.wake(n.snapshotId), { prefix: o.prefix });
        }
        let printed = 0;
        for await (const item of stream) {
          await printItem(table, item, { format: o.format as "jsonl" | "table", projection, partition, withSnapshotId: o.withSnapshotId === true }, out);
          // Progress only once the rows reached the OS (a pipe's kernel buffer): a tail killed before that prints the
          // snapshot again after its restart, never skips it.
          await stdoutFlushed();
          await stream.ack(item.snapshotId);
          if (o.maxSnapshots !== undefined && ++printed >= o.maxSnapshots) break;
        }
      } finally {
        if (timer !== null) clearTimeout(timer);
        process.removeListener("SIGINT", stop);
        process.removeListener("SIGTERM", stop);
        stream.close();
        sub?.stop();
        await nc?.close().catch(() => undefined);
      }
    });
}

/** The scan mode as the consume protocol takes it (`from`). */
function scanModeText(m: ScanMode): string {
  switch (m.mode) {
    case "latest":
    case "latest-full":
      return m.mode;
    case "from-snapshot":
      return `snapshot:${m.snapshotId}`;
    case "from-snapshot-full":
      return `snapshot-full:${m.snapshotId}`;
    case "from-timestamp":
      return `time:${m.timestampMillis}`;
  }
}

/** `k=v,k2=v2` as the consume protocol's partition (the reader checks keys and values against the table). */
function partitionRecord(spec: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of spec.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) throw new UsageError(`--partition '${spec}': '${part.trim()}' is not key=value`);
    out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return out;
}

/**
 * The tail through a reader node (no warehouse): the rows arrive as Arrow batches over NATS, the column types for
 * printing come from the cluster's describe-table, and progress (with a consumer id) is recorded by the reader once
 * a snapshot's rows reached the OS.
 */
async function tailThroughReader(name: string, o: TailOpts, out: (s: string) => void): Promise<void> {
  const nc = await connectOrExplain({ ...o, nats: o.nats! }, { name: "natslake-tail" });
  let consumer: Consumer | null = null;
  let stopped = false;
  const stop = (): void => {
    stopped = true;
    void consumer?.close();
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  const timer = o.for !== undefined ? setTimeout(stop, o.for) : null;
  try {
    const described = (await adminRequest(nc, o.prefix, { type: "describe-table", table: name })) as { columns: Array<{ name: string; type: string }> };
    const columns = described.columns.map((c) => ({ name: c.name, type: parseSqlType(c.type) }));
    const projection = o.columns?.split(",").map((c) => c.trim()).filter(Boolean);
    const fields: Array<{ name: string; type: DataType }> = projection
      ? projection.map((c) => {
          const f = columns.find((x) => x.name === c);
          if (f === undefined) throw new LakeError(ErrorKind.DataInvalid, `no column '${c}' in ${name} (columns: ${columns.map((x) => x.name).join(", ")})`);
          return f;
        })
      : columns;
    consumer = await openConsumer({
      nc,
      table: name,
      from: scanModeText(o.from),
      prefix: o.prefix,
      ...(o.consumerId !== undefined ? { consumerId: o.consumerId } : {}),
      ...(projection ? { projection } : {}),
      ...(o.partition ? { partition: partitionRecord(o.partition) } : {}),
    });
    if (stopped) await consumer.close(); // a signal during the open
    let printed = 0;
    for await (const s of consumer) {
      const table: unknown[][] = [];
      for await (const batch of s.batches) {
        // A primary-key table's rows carry their kind: printed as the last column.
        if (!fields.includes(ROW_KIND_FIELD) && batch.schema.fields.some((f) => f.name === ROW_KIND_FIELD.name)) fields.push(ROW_KIND_FIELD);
        for (const row of recordBatchToRows(fields, batch)) {
          if (o.format === "jsonl") out(jsonLine(fields, row, o.withSnapshotId === true ? s.snapshotId : undefined));
          else table.push(fields.map((f) => toJsonValue(f.type, row[f.name] ?? null)));
        }
      }
      if (stopped) break; // closed halfway through the snapshot: not acknowledged, printed again after a restart
      if (o.format === "table") printTable(s.snapshotId, s.kind, fields, table, out);
      // Progress only once the rows reached the OS (see the warehouse path).
      await stdoutFlushed();
      // A reader that dies meanwhile does not fail it: the ack follows the consumer to its next session. A Ctrl-C
      // during it closes the consumer: the snapshot may stay unacknowledged (printed again after a restart).
      if (o.consumerId !== undefined) {
        try {
          await s.ack();
        } catch (e) {
          if (stopped) break;
          throw e;
        }
      }
      if (o.maxSnapshots !== undefined && ++printed >= o.maxSnapshots) break;
    }
  } finally {
    if (timer !== null) clearTimeout(timer);
    process.removeListener("SIGINT", stop);
    process.removeListener("SIGTERM", stop);
    await consumer?.close();
    await nc.close().catch(() => undefined);
  }
}

function jsonLine(fields: ReadonlyArray<{ name: string; type: DataType }>, row: Row, snapshotId: number | undefined): string {
  const obj: Record<string, unknown> = {};
  for (const f of fields) obj[f.name] = toJsonValue(f.type, row[f.name] ?? null);
  if (snapshotId !== undefined) obj["_snapshot"] = snapshotId;
  return toJsonText(obj);
}

function printTable(snapshotId: number, kind: "full" | "delta", fields: ReadonlyArray<{ name: string }>, rows: unknown[][], out: (s: string) => void): void {
  out(`-- snapshot ${snapshotId} (${kind === "full" ? "the table as of it" : "rows it added"}, ${rows.length} rows)`);
  if (rows.length > 0) out(renderTable(fields.map((f) => f.name), rows));
}

/** Resolves once everything written to stdout so far was handed to the OS. */
function stdoutFlushed(): Promise<void> {
  return new Promise((resolve, reject) => process.stdout.write("", (e) => (e ? reject(e) : resolve())));
}

interface PrintOpts {
  format: "jsonl" | "table";
  projection: string[] | undefined;
  partition: ReturnType<typeof parsePartitionSpec> | undefined;
  withSnapshotId: boolean;
}

async function printItem(table: Table, item: StreamItem, o: PrintOpts, out: (s: string) => void): Promise<void> {
  const fields = o.projection ? o.projection.map((c) => ({ name: c, type: table.typeOf(c) })) : table.schema.fields.map((f) => ({ name: f.name, type: f.type }));
  // A primary-key table's rows carry their kind (`_row_kind`), printed as the last column.
  if (table.isPrimaryKeyTable) fields.push(ROW_KIND_FIELD);
  const rows: unknown[][] = [];
  for await (const row of readRows(table, { ...item.read, ...(o.projection ? { projection: o.projection } : {}), ...(o.partition ? { partition: o.partition } : {}) })) {
    if (o.format === "jsonl") out(jsonLine(fields, row, o.withSnapshotId ? item.snapshotId : undefined));
    else rows.push(fields.map((f) => toJsonValue(f.type, row[f.name] ?? null)));
  }
  if (o.format === "table") printTable(item.snapshotId, item.kind, fields, rows, out);
}
