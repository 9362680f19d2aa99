/**
 * Inboxes: where a client receives replies and consume sessions.
 *
 * - A process's inbox prefix comes from NATSLAKE_INBOX_PREFIX (default nats.js's `_INBOX`). Under the generated
 *   permissions (cluster/nats/permissions.ts) each NATS user may subscribe only to `_INBOX.<user>.>`, so a process sets
 *   the prefix of its user: `NATSLAKE_INBOX_PREFIX=_INBOX.<user>`.
 * - A node answers requests and sends a consume session's rows only to inboxes (`isClientInbox`): a request whose reply
 *   subject — or a consume-open whose `inbox` — names a cluster subject, a JetStream API subject or a KV key is
 *   refused. Without that check, anyone who may send a request could make a node publish onto a subject the node may
 *   write and the requester may not (an empty consume chunk to `$JS.API.STREAM.PURGE.<stream>` purges the stream).
 */
import { createInbox, type ConnectionOptions, type NatsConnection } from "@nats-io/transport-node";

export const INBOX_PREFIX_ENV = "NATSLAKE_INBOX_PREFIX";

/** The inbox prefix the generated permissions give `user`. */
export function clientInboxPrefix(user: string): string {
  return `_INBOX.${user}`;
}

/** Connection options of this process's inbox prefix (none when NATSLAKE_INBOX_PREFIX is unset). */
export function inboxOptions(env: NodeJS.ProcessEnv = process.env): Pick<ConnectionOptions, "inboxPrefix"> {
  const prefix = env[INBOX_PREFIX_ENV];
  return prefix !== undefined && prefix !== "" ? { inboxPrefix: prefix } : {};
}

/** A new inbox under the connection's prefix (nats.js's `createInbox()` alone ignores it). */
export function connectionInbox(nc: NatsConnection): string {
  return createInbox((nc as NatsConnection & { options?: ConnectionOptions }).options?.inboxPrefix);
}

/** An inbox: its first token starts with `_INBOX` (nats.js's default, or a prefix such as `_INBOX.<user>`), no wildcards. */
const INBOX = /^_INBOX[A-Za-z0-9_-]*(\.[^.\s*>]+)+$/;

export function isClientInbox(subject: string | undefined): subject is string {
  return subject !== undefined && INBOX.test(subject);
}
