/**
 * Consumers (`consumer/consumer-<id>`, Paimon's ConsumerManager format: `{"nextSnapshot": N}`): a consumer's read
 * progress — the first snapshot it has not processed yet. Snapshot expiration never removes a snapshot at or after
 * the smallest `nextSnapshot` of the table's consumers, so a consumer that restarts finds what it still needs; an
 * idle consumer (its file not written for `consumer.expiration-time`) stops protecting anything and is removed, as
 * in Paimon, where the file's modification time is the consumer's last activity.
 */
import { join } from "node:path";
import { dataInvalid, ErrorKind, isLakeError } from "../errors.ts";
import { parseJson } from "../format/wire/json.ts";
import type { Table } from "./table.ts";
import { checkName, checkNewName, newNameProblem } from "../names.ts";
import { decodeTableFile } from "./damaged-file.ts";

const CONSUMER_FILE = /^consumer-(.+)$/;

export interface Consumer {
  id: string;
  nextSnapshot: number;
  /** The file's modification time (epoch ms): the consumer's last recorded progress. */
  updatedAtMillis: number;
}

const pathOf = (table: Table, id: string): string => join(table.paths.consumerDir, `consumer-${id}`);

/**
 * A consumer id names a file (`consumer/consumer-<id>`): it is checked by the rules of names (src/names.ts) before a
 * path is built from it. This checks `id` for a consumer of `table` that may be new: by the rules of new names unless
 * the consumer exists already (one made before them, or by Paimon's engines, keeps its progress).
 */
export async function checkConsumerIdFor(table: Table, id: string): Promise<void> {
  checkName("consumer id", id);
  if (newNameProblem("consumer id", id) !== null && !(await table.io.exists(pathOf(table, id)))) checkNewName("consumer id", id);
}

/** Every consumer of the table, by id. */
export async function listConsumers(table: Table): Promise<Consumer[]> {
  const out: Consumer[] = [];
  for (const name of (await table.io.list(table.paths.consumerDir)).sort()) {
    const m = CONSUMER_FILE.exec(name);
    if (m === null) continue;
    const c = await getConsumer(table, m[1]!);
    if (c !== null) out.push(c);
  }
  return out;
}

/** The consumer, or null when it does not exist (or vanished while being read). */
export async function getConsumer(table: Table, id: string): Promise<Consumer | null> {
  checkName("consumer id", id);
  const path = pathOf(table, id);
  let text: string;
  let mtime: number;
  try {
    text = await table.io.readText(path);
    mtime = await table.io.mtime(path);
  } catch (e) {
    if (isLakeError(e, ErrorKind.NotFound)) return null;
    throw e;
  }
  const remedy = `set its progress again (natslake consumer reset ${table.name} ${id} --next-snapshot N) or delete it (natslake consumer delete ${table.name} ${id})`;
  return { id, nextSnapshot: consumerNextSnapshot(path, text, remedy, table.io.uriOf(path)), updatedAtMillis: mtime };
}

/** A consumer file's `nextSnapshot` from its text; anything else is a damaged-file DataInvalid naming the file. */
export function consumerNextSnapshot(path: string, text: string, remedy = "delete it (natslake consumer delete)", uri = path): number {
  return decodeTableFile("consumer", path, () => nextSnapshotOf(parseJson(text)), remedy, uri);
}

/** A consumer file's `nextSnapshot` (Paimon writes `{"nextSnapshot": N}`). */
function nextSnapshotOf(json: unknown): number {
  const next = Number((json as { nextSnapshot?: unknown } | null)?.nextSnapshot);
  if (!Number.isSafeInteger(next) || next < 0) throw dataInvalid("no valid nextSnapshot");
  return next;
}

/** Records that the consumer's next snapshot is `nextSnapshot` (atomic replace; its time is the consumer's activity). */
export async function writeConsumer(table: Table, id: string, nextSnapshot: number): Promise<void> {
  checkName("consumer id", id);
  if (!Number.isSafeInteger(nextSnapshot) || nextSnapshot < 0) throw dataInvalid(`nextSnapshot must be a snapshot id, got ${nextSnapshot}`);
  // writeFile makes the directory when it is missing (no mkdirs: on an object store that would be a PUT per ack).
  await table.io.writeFile(pathOf(table, id), JSON.stringify({ nextSnapshot }));
}

/** Removes the consumer; false when it did not exist. */
export async function deleteConsumer(table: Table, id: string): Promise<boolean> {
  checkName("consumer id", id);
  return table.io.delete(pathOf(table, id));
}

/**
 * Removes consumers idle for longer than `consumer.expiration-time` (nothing when the option is not set), then returns
 * the smallest `nextSnapshot` of those left — the first snapshot expiration must keep — or null when none is left.
 */
export async function consumerProtection(table: Table, now = Date.now(), opts: { dryRun?: boolean } = {}): Promise<{ minNextSnapshot: number | null; expired: string[] }> {
  const expiration = table.options.raw["consumer.expiration-time"] === undefined ? null : table.options.duration("consumer.expiration-time");
  const expired: string[] = [];
  let min: number | null = null;
  for (const c of await listConsumers(table)) {
    if (expiration !== null && c.updatedAtMillis < now - expiration) {
      if (opts.dryRun === true || (await deleteConsumer(table, c.id))) expired.push(c.id);
      continue;
    }
    min = min === null ? c.nextSnapshot : Math.min(min, c.nextSnapshot);
  }
  return { minNextSnapshot: min, expired };
}

export interface ConsumerLag {
  id: string;
  nextSnapshot: number;
  /** Snapshots not processed yet: latest + 1 − nextSnapshot (0 when caught up). */
  snapshotsBehind: number;
  /** Age of the oldest snapshot not processed yet (the earliest retained when it was expired), 0 when caught up. */
  secondsBehind: number;
}

/** Every consumer's lag behind the latest snapshot. */
export async function consumerLag(table: Table, now = Date.now()): Promise<ConsumerLag[]> {
  const latest = await table.snapshots.latestId();
  // The earliest snapshot only when a consumer is behind: without an EARLIEST hint (nothing expired yet) it costs a
  // listing, which the leader would otherwise pay every 5 s for a table nobody consumes.
  let earliest: Promise<number | null> | undefined;
  const out: ConsumerLag[] = [];
  for (const c of await listConsumers(table)) {
    const behind = latest === null ? 0 : Math.max(0, latest + 1 - c.nextSnapshot);
    let seconds = 0;
    const first = behind > 0 ? await (earliest ??= table.snapshots.earliestId()) : null;
    if (first !== null) {
      const oldest = await table.snapshots.snapshot(Math.max(c.nextSnapshot, first));
      seconds = Math.max(0, (now - oldest.timeMillis) / 1000);
    }
    out.push({ id: c.id, nextSnapshot: c.nextSnapshot, snapshotsBehind: behind, secondsBehind: seconds });
  }
  return out;
}
