/**
 * One cluster, one warehouse. A cluster is its prefix on one NATS: its nodes share one membership, one bucket
 * assignment per table and one commit leader per table. A node started on that prefix with another warehouse joined
 * all of it — the coordinator gave it buckets of the other warehouse's tables, it wrote their rows into its own
 * warehouse, and the leader committed snapshots naming files that were never in its warehouse (rows acknowledged,
 * then lost). Seen as "the demo rows never became visible" when `natslake up` ran twice against the same NATS with
 * two warehouses.
 *
 * So the first node to start binds the prefix to its warehouse (a create-if-absent KV write in the cluster's tables
 * bucket), and every node after it checks the binding before it joins: another warehouse is refused at start, with
 * both named and what to do. A warehouse is named as it is reached, without how it is reached: a directory by its
 * absolute path, an object store by `s3://bucket/prefix` without its endpoint or region settings.
 */
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { parseWarehouse } from "../../src/io/warehouse.ts";
import { ErrorKind, LakeError } from "../../src/errors.ts";
import { openKv } from "./table-infra.ts";
import { isJetStreamError, STREAM_NOT_FOUND } from "./jetstream-codes.ts";
import type { Subjects } from "./subjects.ts";
import type { WarehouseBinding } from "../../actors/wire/messages.ts";
import { warehouseBindingSchema } from "../../actors/wire/schemas.ts";

export type { WarehouseBinding };

/**
 * The binding's key in the tables bucket: three tokens, so it is never a table's key (`<database>.<table>`, two
 * tokens, cluster/nats/subjects.ts).
 */
export const WAREHOUSE_BINDING_KEY = "_natslake.cluster.warehouse";

/** The warehouse as every node of a cluster must name it: `file:///abs/path` or `s3://bucket/prefix`. */
export function warehouseIdentity(uri: string): string {
  const loc = parseWarehouse(uri);
  return loc.kind === "local" ? `file://${loc.path}` : `s3://${loc.bucket}/${loc.prefix}`;
}

/** The cluster's binding; null when no node has bound it yet (or no node ever ran with this prefix on this NATS). */
export async function readWarehouseBinding(nc: NatsConnection, subjects: Subjects): Promise<WarehouseBinding | null> {
  let kv: KV;
  try {
    kv = await openKv(nc, subjects.tablesKv);
  } catch (e) {
    if (isJetStreamError(e, STREAM_NOT_FOUND)) return null;
    throw e;
  }
  const e = await kv.get(WAREHOUSE_BINDING_KEY);
  return e === null || e.operation !== "PUT" ? null : parseBinding(e.string());
}

/**
 * Binds the cluster to `warehouse` if no node has bound it yet, and refuses (DataInvalid: a wrong setting, not a
 * passing failure) when it is bound to another one. Two nodes starting at once on an unbound cluster race on the
 * create: the loser reads the winner's binding and is judged by it. `created` says whether this call wrote the
 * binding (a node restarting on its own cluster finds the binding it wrote before: not created).
 */
export async function bindWarehouse(
  nc: NatsConnection,
  subjects: Subjects,
  o: { warehouse: string; nodeId: string; now?: () => number },
): Promise<{ binding: WarehouseBinding; created: boolean }> {
  const kv = await openKv(nc, subjects.tablesKv);
  const mine = warehouseIdentity(o.warehouse);
  const binding: WarehouseBinding = { v: 1, warehouse: mine, boundBy: o.nodeId, at: (o.now ?? Date.now)() };
  let lastError: unknown = null;
  for (let attempt = 0; attempt < 3; attempt++) {
    const e = await kv.get(WAREHOUSE_BINDING_KEY);
    const present = e !== null && e.operation === "PUT" ? e : null;
    const bound = present === null ? null : parseBinding(present.string());
    if (bound !== null) {
      if (bound.warehouse !== mine) throw boundElsewhere(subjects, bound, mine);
      return { binding: bound, created: false };
    }
    try {
      // Never bound (or removed): create; a value that is not a binding (written by hand) is replaced.
      if (present === null) await kv.create(WAREHOUSE_BINDING_KEY, JSON.stringify(binding));
      else await kv.update(WAREHOUSE_BINDING_KEY, JSON.stringify(binding), present.revision);
      return { binding, created: true };
    } catch (err) {
      // Another node wrote it first (wrong last sequence): read what it bound, and be judged by that.
      lastError = err;
    }
  }
  throw new LakeError(ErrorKind.Unexpected, "the cluster's warehouse binding could be neither written nor read", { cause: lastError });
}

/** The refusal: both warehouses named, and the two ways out. */
function boundElsewhere(subjects: Subjects, bound: WarehouseBinding, mine: string): LakeError {
  const since = new Date(bound.at).toISOString();
  return new LakeError(
    ErrorKind.DataInvalid,
    `the cluster with prefix '${subjects.prefix}' on this NATS serves the warehouse ${bound.warehouse} (bound by node ${bound.boundBy} at ${since}), and this node was given ${mine}: ` +
      `every node of a cluster uses the same warehouse. For a second cluster on this NATS, give it a prefix of its own (--prefix); ` +
      `to move this cluster to ${mine}, stop all of its nodes and remove the binding first (nats kv del ${subjects.tablesKv} ${WAREHOUSE_BINDING_KEY})`,
    { context: { prefix: subjects.prefix, bound: bound.warehouse, given: mine } },
  );
}

/** The stored binding; null for a value that is not one (written by hand): it is then replaced. */
function parseBinding(text: string): WarehouseBinding | null {
  try {
    const parsed = warehouseBindingSchema.safeParse(JSON.parse(text));
    return parsed.success ? (parsed.data as WarehouseBinding) : null;
  } catch {
    return null;
  }
}
