/**
 * `natslake table reset-offsets`: the explicit, recorded recovery after a table's ingest stream was deleted and
 * re-created, or its JetStream store lost (see src/commit/stream-identity.ts). It moves the table's offsets and the
 * router's progress onto the live stream:
 * - one snapshot (no data files, `natslake.offset-epoch` + 1) records the live stream and, for every bucket, where
 *   reading resumes: `earliest` = before the first message the live stream still holds (nothing in it is skipped),
 *   `latest` = after its last message (what it holds now is skipped — an explicit choice, never the default);
 * - the router's progress (raw subject) is moved the same way, if it counted in another stream.
 * Refused when the offsets already belong to the live stream: resetting them would read committed rows again.
 * Writers and the router that refused the old offsets look again every few seconds and resume on their own; the
 * leader rejects committables still pending from the old stream.
 */
import { ErrorKind, LakeError } from "../src/errors.ts";
import { resetStreamOffsets } from "../src/commit/stream-commit.ts";
import { natslakeState } from "../src/format/snapshot.ts";
import type { Table } from "../src/table/table.ts";
import type { IngestLog, RawLog } from "../actors/ports.ts";
import { checkTableStream } from "../actors/stream-check.ts";

export type ResetFrom = "earliest" | "latest";

export interface ResetOutcome {
  table: string;
  snapshotId: number;
  stream: string;
  /** Every bucket resumes after this sequence of the live stream. */
  offset: number;
  offsetEpoch: number;
  /** Whether the router's progress was moved too (false when it already counted in the live stream or was empty). */
  routerReset: boolean;
}

export async function resetOffsets(ports: { ingest: IngestLog; raw: RawLog }, table: Table, from: ResetFrom): Promise<ResetOutcome> {
  const live = await ports.ingest.liveStream(table.name);
  const offset = from === "earliest" ? Math.max(0, live.firstSeq - 1) : live.lastSeq;
  const buckets = table.bucket > 0 ? Array.from({ length: table.bucket }, (_, b) => b) : [0];
  const snapshot = await resetStreamOffsets(table, { stream: live.identity, offsetOf: () => offset, buckets, commitUser: `natslake-reset-${table.name}` }, (st) => {
    if (checkTableStream(table.name, st, live).ok)
      throw new LakeError(ErrorKind.Conflict, `${table.name}: its offsets already belong to the live stream ${live.identity}; nothing to reset (a reset would read committed rows again)`);
  });
  const { progress, revision } = await ports.raw.readProgress(table.name);
  // Left alone when it counts in the live stream already, or was never written (the router then starts at the beginning).
  const routerOk = progress.stream === live.identity || revision === 0;
  if (!routerOk) await ports.raw.writeProgress(table.name, { stream: live.identity, through: offset, intent: null }, revision);
  return { table: table.name, snapshotId: snapshot.id, stream: live.identity, offset, offsetEpoch: natslakeState(snapshot)?.offsetEpoch ?? 0, routerReset: !routerOk };
}
