/**
 * Where a maintenance command (compact, expire-snapshots, expire-partitions, remove-orphans) runs:
 *
 * - `--nats URL`: if the cluster serves the table (its metadata is in KV `<p>_tables`), the job is sent to the
 *   table's leader (`<p>.ctl.maint.<db>.<table>`), which runs it in its MaintenanceActor, one job at a time with its
 *   scheduled maintenance. No leader answering within `--timeout` is an error (exit 1): the command never falls back
 *   to racing the cluster from outside. A table the cluster does not serve runs on the warehouse (said on stderr).
 * - otherwise (`--local`, or no `--nats`): on the warehouse directly, as the library does.
 *
 * Dry runs go the same way as real ones, so a dry run shows what the same path would do. Both paths run the same
 * function (actors/maintenance-jobs.ts) and return the same summary object, so stdout is identical either way;
 * progress bars are drawn from the leader's progress messages as from local progress.
 */
import { type Command, InvalidArgumentError, Option } from "commander";
import type { NatsConnection } from "@nats-io/transport-node";
import { ErrorKind, isLakeError, LakeError } from "../../src/errors.ts";
import { parseDuration } from "../../src/options.ts";
import { parseIdentifier } from "../../src/table/catalog.ts";
import type { Table } from "../../src/table/table.ts";
import { runMaintenanceJob, type JobProgress, type MaintenanceResults } from "../../actors/maintenance-jobs.ts";
import type { MaintenanceRequest, MaintenanceTaskName, MaintenanceTaskOptions } from "../../actors/wire/messages.ts";
import { requestMaintenance } from "../maintenance-client.ts";
import { Subjects } from "../nats/subjects.ts";
import { readTableMeta } from "../nats/table-infra.ts";
import { catalogFrom, connectOrExplain, UsageError, type WarehouseOpts } from "./common.ts";
import { redactUrl } from "../nats/connect-errors.ts";

export interface RoutingOpts extends WarehouseOpts {
  nats?: string;
  local?: boolean;
  prefix: string;
  timeout: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;

function timeoutArg(v: string): number {
  try {
    const ms = parseDuration(v);
    if (ms > 0) return ms;
  } catch {
    // said below
  }
  throw new InvalidArgumentError(`not a duration above zero: '${v}' (e.g. 10 s)`);
}

/** The flags every maintenance command takes to choose its path. */
export function addRoutingOptions(cmd: Command): Command {
  return cmd
    .option("--nats <url>", "run it on the table's leader when this cluster serves the table (never beside it); the warehouse is then not needed")
    .addOption(new Option("--local", "run it on the warehouse directly (the default without --nats)").conflicts("nats"))
    .option("--prefix <p>", "subject prefix with --nats", "lake")
    .option("--timeout <duration>", "with --nats: how long to wait for the leader to take the job", timeoutArg, DEFAULT_TIMEOUT_MS);
}

export interface RunHooks {
  /** Progress bars want it (a terminal, not --json): asked from the leader only then. */
  wantsProgress: boolean;
  onProgress: (p: JobProgress) => void;
  /** Commands that read existing tables refuse a missing warehouse (see catalogFrom). */
  warehouseMustExist: boolean;
}

export interface Routed<T> {
  result: T;
  /** With --nats: where it ran, for one line on stderr (stdout stays the same whichever path ran). */
  note?: string;
}

/**
 * Runs the job where `o` says (see the module comment) and returns its summary. `runLocal` replaces what runs on the
 * warehouse (rollback: Paimon's rollback there, the job — a restore — only on the leader).
 */
export async function runRouted<K extends MaintenanceTaskName, L = MaintenanceResults[K]>(
  name: string,
  job: { task: K; options: MaintenanceTaskOptions[K] },
  o: RoutingOpts,
  h: RunHooks,
  runLocal?: (table: Table) => Promise<L>,
): Promise<Routed<MaintenanceResults[K] | L>> {
  const id = parseIdentifier(name);
  const local = async (): Promise<MaintenanceResults[K] | L> => {
    const table = await catalogFrom(o, { mustExist: h.warehouseMustExist }).getTable(id);
    return runLocal !== undefined ? runLocal(table) : runMaintenanceJob(table, job, { onProgress: h.onProgress });
  };
  if (o.nats === undefined) return { result: await local() };
  const nc = await connectOrExplain({ ...o, nats: o.nats });
  try {
    if (!(await servedByCluster(nc, o, name))) {
      if (o.warehouse === undefined && process.env["NATSLAKE_WAREHOUSE"] === undefined)
        throw new UsageError(`${name} is not served by the cluster at ${redactUrl(o.nats)} (no metadata in KV ${new Subjects(o.prefix).tablesKv}): pass --warehouse to run it on the warehouse directly`);
      return { result: await local(), note: `${name} is not served by the cluster at ${redactUrl(o.nats)}: ${job.task} ran on the warehouse directly` };
    }
    const out = await requestMaintenance(nc, { type: "maintenance", v: 1, task: job.task, table: name, options: job.options, ...(h.wantsProgress ? { progress: true } : {}) } as MaintenanceRequest, {
      prefix: o.prefix,
      acceptTimeoutMs: o.timeout,
      silenceTimeoutMs: Math.max(30_000, 3 * o.timeout),
      onProgress: h.onProgress,
    });
    return { result: out.result as MaintenanceResults[K], note: `${job.task} of ${name} ran on ${out.node}, the table's leader` };
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/** Whether the cluster serves the table: its producer metadata is in KV (what every node publishes for its tables). */
async function servedByCluster(nc: NatsConnection, o: RoutingOpts, name: string): Promise<boolean> {
  try {
    await readTableMeta(nc, new Subjects(o.prefix), name);
    return true;
  } catch (e) {
    if (isLakeError(e, ErrorKind.NotFound)) return false;
    if (isLakeError(e)) throw e;
    throw new LakeError(ErrorKind.Io, `cannot read the metadata of '${name}' from NATS at ${redactUrl(o.nats ?? "")}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
}
