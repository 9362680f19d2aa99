/**
 * The leader's end of maintenance requests (`<p>.ctl.maint.<db>.<table>`): validates each request, hands it to the
 * table's MaintenanceActor, and turns the actor's answers into messages on the request's reply subject (see
 * MaintenanceReply in actors/wire/messages.ts for the sequence). The node subscribes when it gains the table's
 * leadership and unsubscribes when it loses it. No queue group: during a leader change the old and the new leader
 * may both be subscribed for a moment, both get the request, and the old one — its lease gone — refuses it while
 * the new one runs it; with a queue group the request could land only on a paused ex-leader and never be answered.
 */
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { ActorRef, Logger } from "../actors/runtime/index.ts";
import type { MaintenanceMsg } from "../actors/maintenance.ts";
import type { MaintenanceJob } from "../actors/maintenance-jobs.ts";
import type { MaintenanceResponder } from "../actors/ports.ts";
import { parseMaintenanceRequest } from "../actors/wire/maintenance-request.ts";
import type { MaintenanceReply, MaintenanceTaskName } from "../actors/wire/messages.ts";
import { ensureError, ErrorKind, isLakeError } from "../src/errors.ts";
import type { Table } from "../src/table/table.ts";
import type { Subjects } from "./nats/subjects.ts";
import { isClientInbox } from "./nats/inbox.ts";

/** How often a running job says it is still running (the CLI gives up after a long silence). */
export const KEEPALIVE_MS = 2000;
/** Progress messages at most this often (orphan removal reports every file). */
const PROGRESS_EVERY_MS = 200;

export interface MaintenanceServiceDeps {
  nc: NatsConnection;
  subjects: Subjects;
  table: Table;
  nodeId: string;
  actor: ActorRef<MaintenanceMsg>;
  log: Logger;
}

/** Subscribes to the table's maintenance subject; the returned subscription is ended when the leadership ends. */
export function serveMaintenance(d: MaintenanceServiceDeps): Subscription {
  const sub = d.nc.subscribe(d.subjects.maintenance(d.table.identifier), {
    callback: (err, m) => {
      // Nobody to answer without a reply subject; and answers go to inboxes only (cluster/nats/inbox.ts).
      if (err !== null || !isClientInbox(m.reply)) return;
      const send = replier(d, m.reply);
      try {
        const req = parseMaintenanceRequest(m.data);
        if (req.table !== d.table.name) throw new Error(`the request names table '${req.table}', but was sent to ${d.table.name}'s subject`);
        d.actor.tell({ type: "request", job: { task: req.task, options: req.options } as MaintenanceJob, responder: responder(d, send, req.task, req.progress === true) });
      } catch (e) {
        const err = ensureError(e);
        d.log.warn("maintenance request refused", { table: d.table.name, error: err.message });
        send({ type: "done", ok: false, node: d.nodeId, error: err.message, kind: isLakeError(err) ? err.kind : ErrorKind.DataInvalid });
      }
    },
  });
  return sub;
}

function replier(d: MaintenanceServiceDeps, subject: string): (r: MaintenanceReply) => void {
  return (r) => {
    try {
      d.nc.publish(subject, new TextEncoder().encode(JSON.stringify(r)));
    } catch (e) {
      // The connection closed (the node stops): the caller will see silence and say so.
      d.log.warn("maintenance reply not sent", { table: d.table.name, error: ensureError(e).message });
    }
  };
}

function responder(d: MaintenanceServiceDeps, send: (r: MaintenanceReply) => void, task: MaintenanceTaskName, wantsProgress: boolean): MaintenanceResponder {
  const node = d.nodeId;
  let keepalive: NodeJS.Timeout | undefined;
  let lastProgress = 0;
  let finished = false;
  const end = (): boolean => {
    if (finished) return false;
    finished = true;
    clearInterval(keepalive);
    return true;
  };
  return {
    accepted(queuedBehind) {
      send({ type: "accepted", node, task, table: d.table.name, queuedBehind });
      keepalive = setInterval(() => send({ type: "running", node }), KEEPALIVE_MS);
      keepalive.unref();
    },
    progress(p) {
      if (!wantsProgress || finished) return;
      const now = performance.now();
      if (p.done < p.total && now - lastProgress < PROGRESS_EVERY_MS) return;
      lastProgress = now;
      send({ type: "progress", node, ...p });
    },
    done(result) {
      if (!end()) return;
      const bytes = new TextEncoder().encode(JSON.stringify(result));
      // A result larger than one message (an orphan run listing many files) goes in base64 slices first.
      const slice = Math.floor(((d.nc.info?.max_payload ?? 1024 * 1024) - 1024) * 0.7);
      if (bytes.length <= slice) return send({ type: "done", ok: true, node, result });
      let parts = 0;
      for (let at = 0; at < bytes.length; at += slice, parts++) send({ type: "part", node, index: parts, data: Buffer.from(bytes.subarray(at, at + slice)).toString("base64") });
      send({ type: "done", ok: true, node, parts });
    },
    failed(error) {
      if (!end()) return;
      send({ type: "done", ok: false, node, error: error.message, kind: isLakeError(error) ? error.kind : ErrorKind.Unexpected });
    },
  };
}
