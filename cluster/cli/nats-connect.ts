/**
 * Connecting the CLI's NATS clients (`publish`, `subscribe`): a server that cannot be reached is one line,
 * `cannot reach NATS at <url>: <reason>`, exit 1 — not a stack trace.
 *
 * (Local to the cluster commands for now; common.ts is getting a shared helper of the same kind — merge them then.)
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { ErrorKind, LakeError } from "../../src/errors.ts";

/** A NATS server that cannot be reached (exit code 1, printed without a stack: a LakeError of kind Io). */
export function cannotReachNats(url: string, reason: unknown): LakeError {
  const why = reason instanceof Error ? reason.message : String(reason);
  return new LakeError(ErrorKind.Io, `cannot reach NATS at ${url}: ${why}`, { cause: reason, retryable: true });
}

/** Connects to `url` (a URL or a comma-separated list) or throws `cannotReachNats`. */
export async function connectNats(url: string, timeoutMs = 5_000): Promise<NatsConnection> {
  try {
    return await connect({ servers: url.split(",").map((s) => s.trim()).filter(Boolean), timeout: timeoutMs });
  } catch (e) {
    throw cannotReachNats(url, e);
  }
}
