/**
 * Primary-key tables for the point-lookup tests (src/scan/lookup.ts): a partitioned table written through natslake's
 * library with upserts, -U/+U updates and deletes (by key, and whole rows) over many commits, compacted now and then
 * so that keys live in several sorted runs and levels at once; the keys to ask for (written, deleted, never written,
 * in a partition never written); and the check that each lookup answer is the row a full read of the same snapshot
 * has for that key, or null when it has none.
 */
import assert from "node:assert/strict";
import { Catalog, parseColumnList, parseIdentifier, type Table } from "../../src/index.ts";
import { BatchWriter } from "../../src/write/batch-writer.ts";
import { compactTable } from "../../src/maintenance/compact.ts";
import { toJsonValue, type Row } from "../../src/format/values.ts";
import type { DataField } from "../../src/format/data-types.ts";
import { KeyLookup, type LookupSpec } from "../../src/scan/lookup.ts";
import { readJson } from "./tables.ts";

type R = Record<string, unknown>;

export const LOOKUP_COLUMNS = "region STRING NOT NULL, id BIGINT NOT NULL, v STRING, n INT, ts BIGINT";
export const LOOKUP_REGIONS = ["eu", "us", "apac"];

/** A deterministic generator (xorshift32), so that a failure replays. */
export function seeded(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 4294967296;
  };
}

/** `region/id`: a key's identity in these tests, the same for a key object and a row read back as JSON. */
export const keyText = (r: R): string => `${String(r["region"])}/${String(r["id"])}`;

/** Creates `name` with LOOKUP_COLUMNS, partitioned by region, primary key (region, id), with `options`. */
export function createLookupTable(warehouse: string, name: string, options: Record<string, string>): Promise<Table> {
  return new Catalog(warehouse).createTable(parseIdentifier(name), {
    columns: parseColumnList(LOOKUP_COLUMNS),
    partitionKeys: ["region"],
    primaryKeys: ["region", "id"],
    options: { bucket: "3", "num-sorted-run.compaction-trigger": "3", "num-levels": "5", "target-file-size": "3 kb", "file.compression": "none", ...options },
  });
}

export interface LookupHistory {
  /** Every snapshot the history committed (writes and compactions), in order. */
  snapshots: number[];
  /** Keys to ask for: every key written (some deleted since), ids never written, and a partition never written. */
  keys: R[];
}

/**
 * `rounds` commits of changes to ids 0..`idRange` in the first two regions (a third written once, in bulk), every
 * fifth large, each round's rows random: upserts, -U/+U pairs, deletes by key or whole row; `ts` random, so a
 * `sequence.field = ts` table keeps a version other than the last. compactTable every second round (a universal
 * pick), once fully; the last round's files stay at level 0.
 */
export async function writeLookupHistory(t: Table, opts: { rounds?: number; idRange?: number; seed?: number } = {}): Promise<LookupHistory> {
  const random = seeded(opts.seed ?? 20261207);
  const idRange = opts.idRange ?? 800;
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const written = new Map<string, R>();
  const snapshots: number[] = [];
  const record = (id: number | null): void => {
    if (id !== null) snapshots.push(id);
  };
  let n = 0;
  const rounds = opts.rounds ?? 14;
  for (let round = 0; round < rounds; round++) {
    const w = await BatchWriter.open(t);
    const changes: R[] = [];
    const size = round % 5 === 0 ? 500 : 5 + Math.floor(random() * 40);
    for (let i = 0; i < size; i++) {
      n++;
      const key = { region: pick(LOOKUP_REGIONS.slice(0, 2)), id: BigInt(Math.floor(random() * idRange)) };
      const values = { v: `v${n} `.padEnd(30 + (n % 17), "x"), n, ts: BigInt(Math.floor(random() * 1000)) };
      const dice = random();
      if (dice < 0.12) changes.push({ _row_kind: "-D", ...key });
      else if (dice < 0.2) changes.push({ _row_kind: "-D", ...key, ...values });
      else if (dice < 0.3) changes.push({ _row_kind: "-U", ...key, ...values }, { _row_kind: "+U", ...key, ...values, v: `updated ${n}` });
      else changes.push({ ...key, ...values });
      written.set(keyText(key), key);
    }
    if (round === 2) {
      for (let id = 0; id < 200; id++) {
        const key = { region: "apac", id: BigInt(id * 3) };
        changes.push({ ...key, v: `apac ${id}`, n: id, ts: BigInt(id) });
        written.set(keyText(key), key);
      }
    }
    await w.write(changes);
    record((await w.commit()).snapshot?.id ?? null);
    if (round === 6) record((await compactTable(t, { full: true })).snapshotId);
    else if (round % 2 === 1 && round < rounds - 1) record((await compactTable(t)).snapshotId);
  }
  const never = [
    { region: "eu", id: BigInt(idRange + 7) },
    { region: "us", id: -1n },
    { region: "apac", id: 1n },
    { region: "mars", id: 5n },
  ];
  return { snapshots, keys: [...written.values(), ...never] };
}

/** A row of `fields` rendered as `readJson` renders rows. */
export const rowJson = (fields: readonly DataField[], row: Row): R => Object.fromEntries(fields.map((f) => [f.name, toJsonValue(f.type, row[f.name] ?? null)]));

/**
 * Looks every key up at the snapshot `spec` chooses and asserts each answer is the full read's row of that key there
 * (with `spec.columns`), or null when the read has none; returns the full read by key and the lookup used.
 */
export async function expectLookupsEqualRead(t: Table, keys: readonly R[], spec: LookupSpec = {}): Promise<{ read: Map<string, R>; lookup: KeyLookup }> {
  const readSpec = { ...(spec.snapshotId !== undefined ? { snapshotId: spec.snapshotId } : {}), ...(spec.tag !== undefined ? { tag: spec.tag } : {}) };
  const full = new Map((await readJson(t, readSpec)).map((r) => [keyText(r), r]));
  const lookup = await KeyLookup.open(t, spec);
  const answers = await lookup.get(keys);
  assert.equal(answers.length, keys.length);
  const columns = spec.columns ?? lookup.columns.map((c) => c.name);
  let found = 0;
  keys.forEach((k, i) => {
    const row = full.get(keyText(k));
    const expected = row === undefined ? null : Object.fromEntries(columns.map((c) => [c, row[c]]));
    const answer = answers[i]!;
    if (answer !== null) found++;
    assert.deepEqual(answer === null ? null : rowJson(lookup.columns, answer), expected, `${t.name} key ${keyText(k)} at ${JSON.stringify(readSpec)}`);
  });
  // The keys asked for hold both kinds of answer, or the comparison above proved little.
  assert.ok(found > 0 && found < keys.length, `${found} of ${keys.length} keys found`);
  return { read: full, lookup };
}
