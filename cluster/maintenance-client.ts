/**
 * Client side of maintenance requests (`<p>.ctl.maint.<db>.<table>`, answered by the table's leader): used by the
 * CLI's compact, expire-snapshots, expire-partitions and remove-orphans with `--nats`.
 *
 * Two waits, told apart because a compaction may run for minutes: `acceptTimeoutMs` for a leader to take the
 * request (none did: no leader now — a failover in progress, every committer down or paused), then, while the job
 * runs, at most `silenceTimeoutMs` between two messages (the leader sends one every couple of seconds; silence means
 * it died or froze mid-job, and whether the job finished is not known). Neither is retried here: the CLI reports it
 * and exits non-zero rather than running the job a second time or beside the cluster.
 */
import { type Msg, type NatsConnection } from "@nats-io/transport-node";
import { ErrorKind, LakeError } from "../src/errors.ts";
import { parseIdentifier } from "../src/table/catalog.ts";
import type { MaintenanceReply, MaintenanceRequest } from "../actors/wire/messages.ts";
import { Subjects } from "./nats/subjects.ts";
import { connectionInbox } from "./nats/inbox.ts";

export interface MaintenanceCallOptions {
  prefix: string;
  acceptTimeoutMs: number;
  silenceTimeoutMs: number;
  onAccepted?: (node: string, queuedBehind: number) => void;
  onProgress?: (p: { done: number; total: number; files?: number }) => void;
}

export interface MaintenanceOutcome {
  /** The node that ran the job (the table's leader). */
  node: string;
  result: unknown;
}

export async function requestMaintenance(nc: NatsConnection, req: MaintenanceRequest, o: MaintenanceCallOptions): Promise<MaintenanceOutcome> {
  const subject = new Subjects(o.prefix).maintenance(parseIdentifier(req.table));
  const inbox = connectionInbox(nc);
  const sub = nc.subscribe(inbox);
  let node: string | null = null;
  const parts: Uint8Array[] = [];
  let timer: NodeJS.Timeout | undefined;
  const arm = (ms: number): void => {
    clearTimeout(timer);
    timer = setTimeout(() => sub.unsubscribe(), ms);
  };
  let silentFor: "accept" | "job" = "accept";
  try {
    arm(o.acceptTimeoutMs);
    nc.publish(subject, new TextEncoder().encode(JSON.stringify(req)), { reply: inbox });
    for await (const m of sub) {
      if (isNoResponders(m))
        throw new LakeError(ErrorKind.Unexpected, `no leader of ${req.table} answered: nobody serves ${subject} (is a node with the committer role running? a leader change takes up to the lease TTL; for a cluster that is stopped, --local runs it on the warehouse)`);
      const r = JSON.parse(new TextDecoder().decode(m.data)) as MaintenanceReply;
      // During a leader change two nodes may get the request: the one that accepted it is the one that answers.
      if (node !== null && r.node !== node) continue;
      switch (r.type) {
        case "accepted":
          node = r.node;
          silentFor = "job";
          o.onAccepted?.(r.node, r.queuedBehind);
          break;
        case "progress":
          o.onProgress?.(r);
          break;
        case "running":
          break;
        case "part":
          parts[r.index] = Buffer.from(r.data, "base64");
          break;
        case "done":
          if (!r.ok) {
            // A refusal before acceptance may come from an ex-leader while the new one accepts: wait for it.
            if (node === null && r.kind === ErrorKind.Fenced) continue;
            throw new LakeError(r.kind as ErrorKind, r.error);
          }
          if (r.parts === undefined) return { node: r.node, result: r.result };
          if (parts.length !== r.parts || parts.some((p) => p === undefined)) throw new LakeError(ErrorKind.Unexpected, `the reply of ${r.node} lost parts of its result (${parts.filter(Boolean).length} of ${r.parts}): run the command again`);
          return { node: r.node, result: JSON.parse(Buffer.concat(parts).toString("utf8")) };
      }
      arm(silentFor === "accept" ? o.acceptTimeoutMs : o.silenceTimeoutMs);
    }
  } finally {
    clearTimeout(timer);
    sub.unsubscribe();
  }
  if (silentFor === "accept")
    throw new LakeError(ErrorKind.Unexpected, `no leader of ${req.table} answered within ${seconds(o.acceptTimeoutMs)} (the table is served by the cluster, but its leader is down, paused or changing): nothing was done; try again, or raise --timeout`);
  throw new LakeError(ErrorKind.Unexpected, `the leader ${node} stopped answering for ${seconds(o.silenceTimeoutMs)} while it ran ${req.task} on ${req.table}: whether it finished is not known (the job is safe to run again)`);
}

const seconds = (ms: number): string => `${Math.round(ms / 100) / 10} s`;

/** The server's answer to a publish nobody is subscribed to (a status message, 503, with no payload). */
function isNoResponders(m: Msg): boolean {
  return m.data.length === 0 && m.headers?.code === 503;
}
