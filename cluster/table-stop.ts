/**
 * Stopping a table on every node while it is dropped (`<p>.ctl.stop-table.<nodeId>`, StopTableRequest in
 * actors/wire/messages.ts). The node dropping a table asks each live member and waits for every answer, so that when
 * the table's streams and metadata go, no writer, committer, router or maintenance of it runs anywhere to write them
 * again (a coordinator's assignment, a router's progress, a snapshot into the deleted directory).
 *
 * A member that no longer subscribes (it stopped since its last heartbeat) serves nothing; one that does not answer in
 * time (paused, cut off from NATS) may still serve the table, and the drop says so rather than going on.
 */
import { errors, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import type { Logger } from "../actors/runtime/index.ts";
import type { StopTableReply, StopTableRequest } from "../actors/wire/messages.ts";
import { stopTableRequestSchema } from "../actors/wire/schemas.ts";
import { ensureError, ErrorKind, isLakeError, LakeError } from "../src/errors.ts";
import type { Subjects } from "./nats/subjects.ts";
import { isClientInbox } from "./nats/inbox.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

export interface TableStopDeps {
  nc: NatsConnection;
  subjects: Subjects;
  nodeId: string;
  log: Logger;
  /** Stops this node's services of the table; true when it was serving it. */
  stop(table: string): Promise<boolean>;
}

/** This node's end: answers each request once the table's services here have stopped. */
export function serveTableStop(d: TableStopDeps): Subscription {
  return d.nc.subscribe(d.subjects.stopTable(d.nodeId), {
    callback: (err, m) => {
      // Nobody to answer without a reply subject; and answers go to inboxes only (cluster/nats/inbox.ts).
      if (err !== null || !isClientInbox(m.reply)) return;
      const respond = (r: StopTableReply): void => {
        try {
          m.respond(enc.encode(JSON.stringify(r)));
        } catch (e) {
          d.log.warn("stop-table reply not sent", { error: ensureError(e).message });
        }
      };
      let table: string;
      try {
        const parsed = stopTableRequestSchema.safeParse(JSON.parse(dec.decode(m.data)));
        if (!parsed.success) throw new LakeError(ErrorKind.DataInvalid, `stop-table request is not valid: ${parsed.error.issues.map((i) => `${i.path.join(".") || "request"}: ${i.message}`).join("; ")}`);
        table = parsed.data.table;
      } catch (e) {
        const er = ensureError(e);
        respond({ ok: false, node: d.nodeId, error: er.message, kind: isLakeError(er) ? er.kind : ErrorKind.DataInvalid });
        return;
      }
      d.stop(table).then(
        (served) => {
          if (served) d.log.info("table dropped: its services here stopped", { table });
          respond({ ok: true, node: d.nodeId, table, served });
        },
        (e: unknown) => {
          const er = ensureError(e);
          respond({ ok: false, node: d.nodeId, error: er.message, kind: isLakeError(er) ? er.kind : ErrorKind.Unexpected });
        },
      );
    },
  });
}

export interface StopOutcome {
  /** Nodes that were serving the table and have stopped. */
  stopped: string[];
  /** Nodes that were not serving it, or no longer run (nobody subscribes for them). */
  idle: string[];
  /** Nodes that did not answer, with why: they may still serve it. */
  silent: Array<{ node: string; why: string }>;
}

/** Asks each of `nodes` to stop serving `table` and waits for every answer (or `timeoutMs`). */
export async function stopTableEverywhere(nc: NatsConnection, subjects: Subjects, nodes: readonly string[], table: string, timeoutMs: number): Promise<StopOutcome> {
  const req: StopTableRequest = { type: "stop-table", v: 1, table };
  const out: StopOutcome = { stopped: [], idle: [], silent: [] };
  await Promise.all(
    nodes.map(async (node) => {
      let reply: StopTableReply;
      try {
        const m = await nc.request(subjects.stopTable(node), enc.encode(JSON.stringify(req)), { timeout: timeoutMs });
        reply = JSON.parse(dec.decode(m.data)) as StopTableReply;
      } catch (e) {
        if (isNoResponders(e)) out.idle.push(node);
        else out.silent.push({ node, why: `no answer within ${Math.round(timeoutMs / 1000)} s (paused, or cut off from NATS?)` });
        return;
      }
      if (!reply.ok) out.silent.push({ node, why: reply.error });
      else (reply.served ? out.stopped : out.idle).push(node);
    }),
  );
  for (const list of [out.stopped, out.idle]) list.sort();
  out.silent.sort((a, b) => a.node.localeCompare(b.node));
  return out;
}

const isNoResponders = (e: unknown): boolean => e instanceof errors.NoRespondersError || (e instanceof errors.RequestError && e.isNoResponders());
