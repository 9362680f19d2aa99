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

/**
 * How long a node dropping a table waits for every node to stop serving it (cluster/table-drop.ts); the client waits
 * 45 s longer for its answer (the files, streams and keys are deleted after that).
 */
export const DROP_TABLE_STOP_TIMEOUT_MS = 15_000;

/** How long the client waits for the answer to `req`. */
function answerTimeoutMs(req: AdminRequest): number {
  if (req.type === "create-table") return CREATE_TABLE_ENSURE_BUDGET_MS + 15_000;
  if (req.type === "drop-table") return DROP_TABLE_STOP_TIMEOUT_MS + 45_000;
  return 10_000;
}

export async function adminRequest(nc: NatsConnection, prefix: string, req: AdminRequest, timeoutMs = answerTimeoutMs(req)): Promise<unknown> {
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
