/**
 * Snapshot notifications for clients: the committer publishes each one on core NATS `<p>.snap.<db>.<table>` and
 * keeps the last in KV `<p>_snap` (key `<db>.<table>`). `subscribeSnapshots` joins both: it subscribes to the
 * subject first (buffering), reads the KV's last value and delivers it, then the buffered and live notifications —
 * each at most once and in increasing `snapshotId` (an older or repeated id is dropped, e.g. from a deposed leader).
 * Core NATS may drop a notification (a slow subscriber, a reconnect): a subscriber then sees the next one, whose
 * offsets cover everything before it.
 */
import { isJetStreamError, STREAM_NOT_FOUND } from "./nats/jetstream-codes.ts";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import { parseIdentifier } from "../src/table/catalog.ts";
import type { Identifier } from "../src/table/table.ts";
import { openKv } from "./nats/table-infra.ts";
import { DEFAULT_PREFIX, Subjects } from "./nats/subjects.ts";
import type { SnapshotNotification } from "../actors/wire/messages.ts";
import type { Context } from "@opentelemetry/api";
import { contextOfTraceparent } from "../actors/wire/trace-context.ts";

export interface SnapshotSubscribeOptions {
  prefix?: string;
  /** Notifications that cannot be parsed, and errors thrown by the handler (default: ignored). */
  onError?: (err: Error) => void;
}

export interface SnapshotSubscription {
  /** The highest snapshot id delivered so far (0 before the first). */
  readonly lastSnapshotId: number;
  /** Stops delivery; no handler call starts after it returns. */
  stop(): void;
}


/**
 * The OpenTelemetry context to continue a notification's trace in (the commit that landed the snapshot), e.g.
 * `tracer.startActiveSpan("refresh", {}, notificationContext(n), …)`. The root context when the leader did not trace
 * or this process registered no propagator.
 */
export function notificationContext(n: SnapshotNotification): Context {
  return contextOfTraceparent(n.traceparent);
}

/** A parsed notification, or undefined when the payload is not one. */
export function parseSnapshotNotification(data: unknown): SnapshotNotification | undefined {
  if (data === null || typeof data !== "object") return undefined;
  const n = data as Partial<SnapshotNotification>;
  if (n.type !== "snapshot" || typeof n.snapshotId !== "number" || n.offsets === null || typeof n.offsets !== "object") return undefined;
  return n as SnapshotNotification;
}

/**
 * Delivers the KV's last notification for `table` (if any), then live ones, in increasing snapshotId, never one
 * twice. Resolves once the subscription is live and the last value (if any) was handed to `handler`.
 */
export async function subscribeSnapshots(
  nc: NatsConnection,
  table: string | Identifier,
  handler: (n: SnapshotNotification) => void,
  opts: SnapshotSubscribeOptions = {},
): Promise<SnapshotSubscription> {
  const id = typeof table === "string" ? parseIdentifier(table) : table;
  const subjects = new Subjects(opts.prefix ?? DEFAULT_PREFIX);
  const onError = opts.onError ?? ((): void => {});
  let last = 0;
  let stopped = false;
  let buffer: SnapshotNotification[] | null = [];

  const deliver = (n: SnapshotNotification): void => {
    if (stopped || n.snapshotId <= last) return;
    last = n.snapshotId;
    try {
      handler(n);
    } catch (e) {
      onError(e instanceof Error ? e : new Error(String(e)));
    }
  };
  const parse = (read: () => unknown, where: string): SnapshotNotification | undefined => {
    let n: SnapshotNotification | undefined;
    try {
      n = parseSnapshotNotification(read());
    } catch {
      n = undefined;
    }
    if (n === undefined) onError(new Error(`ignored a payload on ${where} that is not a snapshot notification`));
    return n;
  };

  const subject = subjects.snapshots(id);
  const sub: Subscription = nc.subscribe(subject, {
    callback: (err: Error | null, msg: Msg) => {
      if (err !== null) {
        onError(err);
        return;
      }
      const n = parse(() => msg.json(), subject);
      if (n === undefined) return;
      if (buffer !== null) buffer.push(n);
      else deliver(n);
    },
  });
  try {
    // The subscription must be registered with the server before the KV read, or a notification published in
    // between would be missed.
    await nc.flush();
    const kv = await openKv(nc, subjects.snapKv);
    const entry = await kv.get(subjects.tableKey(id)).catch((e: unknown) => {
      if (isJetStreamError(e, STREAM_NOT_FOUND)) return null;
      throw e;
    });
    if (entry !== null && entry.operation === "PUT") {
      const n = parse(() => entry.json(), `KV ${subjects.snapKv}`);
      if (n !== undefined) deliver(n);
    }
  } catch (e) {
    sub.unsubscribe();
    throw e;
  }
  const pending = buffer.sort((a, b) => a.snapshotId - b.snapshotId);
  buffer = null;
  for (const n of pending) deliver(n);

  return {
    get lastSnapshotId() {
      return last;
    },
    stop() {
      stopped = true;
      sub.unsubscribe();
    },
  };
}
