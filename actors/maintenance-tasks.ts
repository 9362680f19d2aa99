/**
 * The leader's scheduled maintenance tasks (run by MaintenanceActor), each a thin schedule over its library function
 * in src/maintenance/.
 */
import { expirePartitions, partitionExpirationEnabled } from "../src/maintenance/expire-partitions.ts";
import type { MaintenanceTask } from "./maintenance.ts";

/** Partition expiration every `partition.expiration-check-interval` (default 1 h) once `partition.expiration-time` is set. */
export const expirePartitionsTask: MaintenanceTask = {
  name: "expire-partitions",
  intervalMs: (t) => (partitionExpirationEnabled(t) ? Math.max(1000, t.options.duration("partition.expiration-check-interval")) : null),
  run: async (t) => {
    const r = await expirePartitions(t);
    return { partitions: r.partitions.length, files: r.files, rows: r.rows };
  },
};

/** Every task the leader schedules. */
export const MAINTENANCE_TASKS: readonly MaintenanceTask[] = [expirePartitionsTask];
