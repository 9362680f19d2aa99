import { test } from "node:test";
import assert from "node:assert/strict";
import { parseMaintenanceRequest } from "../../../actors/wire/maintenance-request.ts";

const enc = (o: unknown): Uint8Array => new TextEncoder().encode(typeof o === "string" ? o : JSON.stringify(o));
const req = (task: string, options: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Uint8Array => enc({ type: "maintenance", v: 1, task, table: "db.t", options, ...extra });

test("maintenance request - every task with its CLI options parses as sent", () => {
  assert.deepEqual(parseMaintenanceRequest(req("compact", { partition: "dt=2026-01-01", bucket: 0, dryRun: true }, { progress: true })), {
    type: "maintenance",
    v: 1,
    task: "compact",
    table: "db.t",
    options: { partition: "dt=2026-01-01", bucket: 0, dryRun: true },
    progress: true,
  });
  assert.deepEqual(parseMaintenanceRequest(req("expire-snapshots", { retainMin: 3, retainMax: 10, olderThanMs: 0, maxDeletes: 5 })).options, { retainMin: 3, retainMax: 10, olderThanMs: 0, maxDeletes: 5 });
  assert.deepEqual(parseMaintenanceRequest(req("expire-partitions", { expirationTimeMs: 86_400_000, timestampFormatter: "yyyy-MM-dd", timestampPattern: "$dt" })).options.dryRun, undefined);
  assert.equal(parseMaintenanceRequest(req("remove-orphans", {})).task, "remove-orphans");
  assert.deepEqual(parseMaintenanceRequest(req("restore", { toSnapshot: 41, dryRun: true })).options, { toSnapshot: 41, dryRun: true });
  assert.deepEqual(parseMaintenanceRequest(req("restore", { toTag: "before-backfill" })).options, { toTag: "before-backfill" });
});

test("maintenance request - bad input is refused with a message naming what is wrong", () => {
  const refused = (data: Uint8Array, message: RegExp): void => {
    assert.throws(() => parseMaintenanceRequest(data), (e: Error & { kind?: string }) => {
      assert.equal(e.kind, "DataInvalid");
      assert.match(e.message, message);
      return true;
    });
  };
  refused(enc("{not json"), /not JSON/);
  refused(req("vacuum"), /unknown task "vacuum" \(one of compact, expire-snapshots, expire-partitions, remove-orphans, restore\)/);
  // A restore names exactly one target.
  refused(req("restore", {}), /\(restore\) is not valid: options: name exactly one of toSnapshot and toTag/);
  refused(req("restore", { toSnapshot: 3, toTag: "t" }), /name exactly one of toSnapshot and toTag/);
  refused(req("restore", { toSnapshot: 0 }), /options\.toSnapshot/);
  refused(enc({ type: "maintenance", v: 1, table: "db.t", options: {} }), /unknown task undefined/);
  // A misspelled option is never ignored (a dropped dryRun would make a dry run real).
  refused(req("remove-orphans", { dryrun: true }), /\(remove-orphans\) is not valid: options: unknown key 'dryrun'/);
  refused(req("expire-snapshots", { olderThanMs: -1 }), /options\.olderThanMs/);
  refused(req("expire-snapshots", { retainMin: 0 }), /options\.retainMin/);
  refused(req("compact", { bucket: 1.5 }), /options\.bucket/);
  refused(req("compact", { partition: "" }), /options\.partition/);
  refused(req("expire-partitions", { timestampPattern: "dt" }), /options\.timestampPattern: names no partition key/);
  refused(req("compact", { dryRun: "yes" }), /options\.dryRun/);
  refused(req("compact", {}, { v: 2 }), /\bv\b/);
  refused(req("compact", {}, { table: "" }), /table/);
  refused(req("compact", {}, { extra: 1 }), /request: unknown key 'extra'/);
  refused(enc({ type: "maintenance", v: 1, task: "compact", table: "db.t" }), /options/);
});
