/**
 * Validation of maintenance requests (`<p>.ctl.maint.<db>.<table>`): anything may publish to the subject, so the
 * leader checks the shape before it queues a job — an unknown task, a misspelled option or a negative duration is
 * answered with one message naming what is wrong, never run with a default in its place. Options are strict (an
 * unknown key is refused) because a silently ignored `dryRun` would turn a dry run into a real one.
 */
import { z } from "zod";
import { dataInvalid } from "../../src/errors.ts";
import type { MaintenanceRequest } from "./messages.ts";

const positiveInt = z.number().int().positive();
const durationMs = z.number().int().nonnegative();

const base = { type: z.literal("maintenance"), v: z.literal(1), table: z.string().min(1), progress: z.boolean().optional() };

/** The leader's check of a maintenance request (published as schemas/maintenance-request.schema.json). */
export const maintenanceRequestSchema = z
  .discriminatedUnion("task", [
    z.strictObject({
      ...base,
      task: z.literal("compact"),
      options: z.strictObject({
        partition: z.string().min(1).optional(),
        bucket: z.number().int().nonnegative().optional(),
        full: z.boolean().optional().describe("primary-key tables: every sorted run of each bucket into the max level"),
        dryRun: z.boolean().optional(),
      }),
    }),
    z.strictObject({
      ...base,
      task: z.literal("expire-snapshots"),
      options: z.strictObject({ retainMin: positiveInt.optional(), retainMax: positiveInt.optional(), olderThanMs: durationMs.optional(), maxDeletes: positiveInt.optional(), dryRun: z.boolean().optional() }),
    }),
    z.strictObject({
      ...base,
      task: z.literal("expire-partitions"),
      options: z.strictObject({
        expirationTimeMs: durationMs.optional(),
        timestampFormatter: z.string().min(1).optional(),
        timestampPattern: z.string().includes("$", { message: "names no partition key (e.g. '$dt')" }).optional(),
        dryRun: z.boolean().optional(),
      }),
    }),
    z.strictObject({ ...base, task: z.literal("remove-orphans"), options: z.strictObject({ olderThanMs: durationMs.optional(), dryRun: z.boolean().optional() }) }),
    z.strictObject({
      ...base,
      task: z.literal("restore"),
      options: z
        .strictObject({ toSnapshot: positiveInt.optional(), toTag: z.string().min(1).optional(), dryRun: z.boolean().optional() })
        .refine((o) => (o.toSnapshot === undefined) !== (o.toTag === undefined), { message: "name exactly one of toSnapshot and toTag" }),
    }),
  ])
  .meta({
    title: "MaintenanceRequest",
    description: "Run one maintenance job now (JSON), on `<p>.ctl.maint.<db>.<table>`: only the table's leader serves it, and answers with MaintenanceReply messages to the request's reply subject.",
  });

const TASKS = ["compact", "expire-snapshots", "expire-partitions", "remove-orphans", "restore"];

/** The request in `data`, or a DataInvalid error saying what is wrong with it. */
export function parseMaintenanceRequest(data: Uint8Array): MaintenanceRequest {
  let o: unknown;
  try {
    o = JSON.parse(new TextDecoder().decode(data));
  } catch {
    throw dataInvalid("a maintenance request is a JSON object; this is not JSON");
  }
  // The discriminated union's own message for a bad task ("Invalid input") names no choices: say them.
  const task = (o as { task?: unknown } | null)?.task;
  if (typeof o === "object" && o !== null && !TASKS.includes(task as string))
    throw dataInvalid(`maintenance request: unknown task ${JSON.stringify(task)} (one of ${TASKS.join(", ")})`);
  const r = maintenanceRequestSchema.safeParse(o);
  if (!r.success) {
    const issues = r.error.issues.map((i) => {
      const where = i.path.length > 0 ? i.path.join(".") : "request";
      return i.code === "unrecognized_keys" ? `${where}: unknown ${i.keys.length === 1 ? "key" : "keys"} ${i.keys.map((k) => `'${k}'`).join(", ")}` : `${where}: ${i.message}`;
    });
    throw dataInvalid(`maintenance request${typeof task === "string" ? ` (${task})` : ""} is not valid: ${issues.join("; ")}`);
  }
  return r.data as MaintenanceRequest;
}
