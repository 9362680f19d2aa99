/**
 * A node's end of control requests (`<p>.ctl.node.<nodeId>`, actors/wire/node-control.ts): `natslake node drain`.
 * Only this node subscribes, so a request for an id no running node has finds no responder and the CLI says so.
 *
 * A drain runs the node's own drain (`Node.handOff`, as on SIGTERM); the reply subject gets `accepted` at once,
 * `progress` every second with the buckets still owned, then `done` with how it went. With `then: "exit"` the
 * process then stops as after a SIGTERM (`exit` is the CLI's stop path).
 */
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "../actors/runtime/index.ts";
import type { NodeControlReply } from "../actors/wire/messages.ts";
import { parseNodeControlRequest } from "../actors/wire/node-control.ts";
import { ensureError, ErrorKind, isLakeError } from "../src/errors.ts";
import type { HandOffResult } from "./node.ts";
import type { Subjects } from "./nats/subjects.ts";
import { isClientInbox } from "./nats/inbox.ts";

export interface NodeControlDeps {
  nc: NatsConnection;
  subjects: Subjects;
  nodeId: string;
  log: Logger;
  /** What the node holds now: buckets owned, tables led, whether a drain began already. */
  holdings(): { buckets: number; leading: string[]; draining: boolean };
  handOff(): Promise<HandOffResult>;
  /** Stops the process as a SIGTERM would (the hand-off is done by then). */
  exit(): void;
}

export function serveNodeControl(d: NodeControlDeps): Subscription {
  return d.nc.subscribe(d.subjects.nodeControl(d.nodeId), {
    callback: (err, m) => {
      // Nobody to answer without a reply subject; and answers go to inboxes only (cluster/nats/inbox.ts).
      if (err !== null || !isClientInbox(m.reply)) return;
      const reply = m.reply;
      const send = (r: NodeControlReply): void => {
        try {
          d.nc.publish(reply, new TextEncoder().encode(JSON.stringify(r)));
        } catch (e) {
          d.log.warn("node control reply not sent", { error: ensureError(e).message });
        }
      };
      let then: "stay" | "exit";
      try {
        then = parseNodeControlRequest(m.data).then;
      } catch (e) {
        const er = ensureError(e);
        d.log.warn("node control request refused", { error: er.message });
        send({ type: "done", ok: false, node: d.nodeId, error: er.message, kind: isLakeError(er) ? er.kind : ErrorKind.DataInvalid });
        return;
      }
      const h = d.holdings();
      d.log.info("drain requested", { nodeId: d.nodeId, then, buckets: h.buckets, leading: h.leading, alreadyDraining: h.draining });
      send({ type: "accepted", node: d.nodeId, buckets: h.buckets, leading: h.leading, alreadyDraining: h.draining });
      const progress = setInterval(() => send({ type: "progress", node: d.nodeId, buckets: d.holdings().buckets }), 1000);
      d.handOff().then(
        (r) => {
          clearInterval(progress);
          send({ type: "done", ok: true, node: d.nodeId, ...r, then });
          if (then === "exit") d.exit();
        },
        (e: unknown) => {
          clearInterval(progress);
          const er = ensureError(e);
          d.log.error("drain failed", { error: er.message });
          send({ type: "done", ok: false, node: d.nodeId, error: er.message, kind: isLakeError(er) ? er.kind : ErrorKind.Unexpected });
        },
      );
    },
  });
}
