/**
 * Client side of the admin request-reply (`<prefix>.ctl.admin`): used by the CLI when `--nats` is given, and by
 * services that create tables through a running cluster.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { LakeError, type ErrorKind } from "../src/errors.ts";
import { Subjects } from "./nats/subjects.ts";
import type { AdminReply, AdminRequest } from "../actors/wire/messages.ts";

/**
 * How long a node answering create-table keeps setting up the new table's streams while JetStream answers slowly
 * (a loaded cluster, streams with 3 replicas and fsync always); the client waits 15 s longer for its answer.
 */
export const CREATE_TABLE_ENSURE_BUDGET_MS = 30_000;

export async function adminRequest(nc: NatsConnection, prefix: string, req: AdminRequest, timeoutMs = req.type === "create-table" ? CREATE_TABLE_ENSURE_BUDGET_MS + 15_000 : 10_000): Promise<unknown> {
  let reply: AdminReply;
  try {
    const m = await nc.request(new Subjects(prefix).admin, new TextEncoder().encode(JSON.stringify(req)), { timeout: timeoutMs });
    reply = JSON.parse(new TextDecoder().decode(m.data)) as AdminReply;
  } catch (e) {
    throw new LakeError("Unexpected", `no cluster answered the admin request (is a node with the reader role running?): ${(e as Error).message}`, { cause: e });
  }
  if (!reply.ok) throw new LakeError(reply.kind as ErrorKind, reply.error);
  return reply.result;
}
