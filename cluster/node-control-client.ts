/**
 * Client side of node control requests (`<p>.ctl.node.<nodeId>`): `natslake node drain`.
 *
 * Only the node with that id subscribes, so "no responders" means no running node has the id: the error lists the
 * live members instead (from the members KV), or says that the id is a member that did not answer (still starting).
 * While the node hands off it reports every second; `silenceTimeoutMs` without a word means it died or froze
 * mid-drain, and the CLI says so rather than waiting forever.
 */
import { type Msg, type NatsConnection } from "@nats-io/transport-node";
import type { KV } from "@nats-io/kv";
import { ErrorKind, LakeError } from "../src/errors.ts";
import type { MemberHeartbeat, NodeControlReply, NodeDrainRequest } from "../actors/wire/messages.ts";
import { Subjects } from "./nats/subjects.ts";
import { connectionInbox } from "./nats/inbox.ts";
import { openKv } from "./nats/table-infra.ts";

export interface DrainCallOptions {
  prefix: string;
  then: NodeDrainRequest["then"];
  /** How long the node may stay silent (it reports every second while it drains). */
  silenceTimeoutMs: number;
  onAccepted?: (r: Extract<NodeControlReply, { type: "accepted" }>) => void;
  onProgress?: (buckets: number) => void;
}

export type DrainOutcome = Extract<NodeControlReply, { type: "done"; ok: true }>;

export async function requestDrain(nc: NatsConnection, nodeId: string, o: DrainCallOptions): Promise<DrainOutcome> {
  const subjects = new Subjects(o.prefix);
  const subject = subjects.nodeControl(nodeId);
  const inbox = connectionInbox(nc);
  const sub = nc.subscribe(inbox);
  let timer: NodeJS.Timeout | undefined;
  let accepted = false;
  const arm = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => sub.unsubscribe(), o.silenceTimeoutMs);
  };
  try {
    arm();
    const req: NodeDrainRequest = { type: "drain", v: 1, then: o.then };
    nc.publish(subject, new TextEncoder().encode(JSON.stringify(req)), { reply: inbox });
    for await (const m of sub) {
      if (isNoResponders(m)) throw await unknownNode(nc, subjects, nodeId);
      const r = JSON.parse(new TextDecoder().decode(m.data)) as NodeControlReply;
      switch (r.type) {
        case "accepted":
          accepted = true;
          o.onAccepted?.(r);
          break;
        case "progress":
          o.onProgress?.(r.buckets);
          break;
        case "done":
          if (!r.ok) throw new LakeError(r.kind as ErrorKind, `${r.node}: ${r.error}`);
          return r;
      }
      arm();
    }
  } finally {
    clearTimeout(timer);
    sub.unsubscribe();
  }
  const s = Math.round(o.silenceTimeoutMs / 1000);
  if (!accepted) throw new LakeError(ErrorKind.Unexpected, `node ${nodeId} did not answer within ${s} s (paused, or its NATS connection is down?): nothing is known to have been done`);
  throw new LakeError(ErrorKind.Unexpected, `node ${nodeId} stopped answering for ${s} s while it drained: whether it finished is not known (see its log; \`natslake status\` shows it as draining or gone)`);
}

/** The server's answer to a request nobody is subscribed to (a status message, 503, with no payload). */
function isNoResponders(m: Msg): boolean {
  return m.data.length === 0 && m.headers?.code === 503;
}

/** Why nobody answered for `nodeId`: not a member (NotFound, listing who is), or a member not serving yet. */
async function unknownNode(nc: NatsConnection, subjects: Subjects, nodeId: string): Promise<LakeError> {
  let members: MemberHeartbeat[] = [];
  try {
    members = await memberList(await openKv(nc, subjects.membersKv));
  } catch {
    // no members bucket: no node ever ran with this prefix
  }
  const live = members.filter((m) => Date.now() - m.at <= 10_000);
  if (live.some((m) => m.nodeId === nodeId))
    return new LakeError(ErrorKind.Unexpected, `node ${nodeId} is a member but does not serve control requests yet (still starting?): try again in a moment`);
  const names = live.map((m) => m.nodeId).sort();
  return new LakeError(ErrorKind.NotFound, `no running node has id '${nodeId}' (${names.length > 0 ? `running: ${names.join(", ")}` : `no node is running with prefix '${subjects.prefix}'`}; see natslake status)`);
}

async function memberList(kv: KV): Promise<MemberHeartbeat[]> {
  const keys: string[] = [];
  for await (const k of await kv.keys()) keys.push(k);
  const out: MemberHeartbeat[] = [];
  for (const k of keys) {
    const e = await kv.get(k);
    if (e !== null && e.operation === "PUT") out.push(e.json<MemberHeartbeat>());
  }
  return out;
}
