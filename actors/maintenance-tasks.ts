/**
 * The leader's scheduled maintenance tasks (run by MaintenanceActor), each a thin schedule over its library function
 * in src/maintenance/.
 */
import { expirePartitions, partitionExpirationEnabled } from "../src/maintenance/expire-partitions.ts";
import { removeOrphans } from "../src/maintenance/remove-orphans.ts";
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

/**
 * Orphan-file cleanup every `natslake.orphan-check-interval` (default 1 h). Files of committables still in flight
 * are protected by age alone: they are seconds old, far below `natslake.orphan-older-than` (1 d).
 */
export const removeOrphansTask: MaintenanceTask = {
  name: "remove-orphans",
  intervalMs: (t) => Math.max(1000, t.options.duration("natslake.orphan-check-interval")),
  run: async (t) => {
    const r = await removeOrphans(t);
    return { "orphan-files": r.totalFiles, "orphan-bytes": r.totalBytes };
  },
};

/** Every task the leader schedules. */
export const MAINTENANCE_TASKS: readonly MaintenanceTask[] = [expirePartitionsTask, removeOrphansTask];
