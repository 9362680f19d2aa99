/**
 * The verifier's look at the snapshot subscriber (test/helpers/subscriber-child.ts, its own process, attached to a
 * NATS node the built-in nemeses never kill), invariant I6: its notifications strictly increasing, without gaps, up
 * to the last snapshot; and the notified snapshot ids that do not exist (part of I4).
 */
import { readFileSync } from "node:fs";
import type { SnapshotNotification } from "../actors/wire/messages.ts";
import type { Snapshot } from "../src/format/snapshot.ts";
import type { ChaosReport, InvariantResult } from "./types.ts";

export interface SubscriberLog {
  ids: number[];
  notifications: SnapshotNotification[];
}

export function readSubscriber(file: string): SubscriberLog {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return { ids: [], notifications: [] };
  }
  const ids: number[] = [];
  const notifications: SnapshotNotification[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      const o = JSON.parse(line) as { n?: SnapshotNotification };
      if (o.n && typeof o.n.snapshotId === "number") {
        ids.push(o.n.snapshotId);
        notifications.push(o.n);
      }
    } catch {
      // a torn last line (the subscriber is stopped by signal)
    }
  }
  return { ids, notifications };
}

/** Notified snapshot ids that are not on disk — ids below the earliest snapshot on disk were expired, not made up. */
export function ghostNotifications(sub: SubscriberLog, idsOnDisk: readonly number[]): number[] {
  const onDisk = new Set(idsOnDisk);
  return sub.ids.filter((x) => !onDisk.has(x) && x >= (idsOnDisk[0] ?? 1));
}

/** I6 and the report's subscriber summary. */
export function judgeSubscriber(sub: SubscriberLog, idsOnDisk: readonly number[], latest: Snapshot | null): { invariant: InvariantResult; summary: ChaosReport["subscriber"] } {
  const gaps: number[] = [];
  let disorder = 0;
  for (let i = 1; i < sub.ids.length; i++) {
    const a = sub.ids[i - 1]!;
    const b = sub.ids[i]!;
    if (b <= a) disorder++;
    else for (let g = a + 1; g < b && gaps.length < 1000; g++) gaps.push(g);
  }
  const lastId = sub.ids[sub.ids.length - 1] ?? null;
  const problems: string[] = [];
  if (sub.ids.length === 0 && idsOnDisk.length > 0) problems.push("the subscriber received no notification");
  if (disorder > 0) problems.push(`${disorder} notifications not in increasing order`);
  if (gaps.length > 0) problems.push(`${gaps.length} snapshot ids never notified: ${gaps.slice(0, 10).join(", ")}`);
  if (latest && lastId !== null && lastId !== latest.id) problems.push(`the last notification is snapshot ${lastId}, the table is at ${latest.id}`);
  return {
    invariant: { ok: problems.length === 0, detail: problems.length === 0 ? `${sub.ids.length} notifications, strictly increasing from ${sub.ids[0] ?? "-"} to ${lastId ?? "-"} without a gap` : problems.join("; ") },
    summary: { notifications: sub.ids.length, firstId: sub.ids[0] ?? null, lastId, gaps: gaps.slice(0, 100) },
  };
}
