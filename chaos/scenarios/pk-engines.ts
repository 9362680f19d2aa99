/**
 * The primary-key scenario per merge engine (issue 30): `pk-upserts`'s faults — the leader SIGKILLed mid-compaction
 * twice and mid-commit, writers mid-flush twice and mid-compaction (chaos/scenarios/pk-upserts.ts, points by seed) —
 * against a table of another merge engine, its load and its model (test/helpers/pk-engines.ts):
 * - `pk-partial-update`: changes that each set `v` and some of three columns (upserts and +U updates, no
 *   retractions: partial-update refuses them by default), over 2,000 keys; a key's row fills in from its parts;
 * - `pk-aggregation`: changes whose `total` is summed, `hi` maxed and `note` kept when non-null, over 2,000 keys
 *   (about 30 changes a key a minute): a change lost or applied twice puts the sum off;
 * - `pk-first-row`: changes over 50,000 keys (new keys keep coming; most keys see two or three versions, of which
 *   the first must stay). Batch reads skip level 0 of a first-row table: once everything acknowledged is committed,
 *   the run waits (up to 60 s) until the writers' compactions have moved it up, and reports the delay.
 *
 * Expected (chaos/pk-verifier.ts): natslake's and pypaimon's reads each equal the engine's model of the acknowledged
 * changes in stream order (unacknowledged ones may or may not be there), the flushed files, levels and sequence chain
 * as for `pk-upserts`.
 */
import type { PkEngine } from "../../test/helpers/pk-engines.ts";
import type { PkWorkload, Scenario } from "../types.ts";
import { armAtStart, fullFaultScript } from "./pk-upserts.ts";

function engineScenario(engine: Exclude<PkEngine, "deduplicate">, keys: number, what: string): Scenario {
  const workload: PkWorkload = { kind: "pk-upserts", engine, keys, deleteShare: 0, updateShare: 0.1, producers: 2 };
  return {
    name: `pk-${engine}`,
    description: `${what}; faults as pk-upserts: the leader killed mid-compaction (twice) and mid-commit, writers mid-flush (twice) and mid-compaction`,
    defaultDurationMs: 60_000,
    load: { ratePerSec: 2000 },
    workload,
    setup: armAtStart,
    run: fullFaultScript,
  };
}

export const scenarios: Scenario[] = [
  engineScenario("partial-update", 2000, "partial rows (each change sets some columns) into a partial-update table the leader compacts"),
  engineScenario("aggregation", 2000, "sums, maxima and last non-null values into an aggregation table the leader compacts"),
  engineScenario("first-row", 50_000, "new and repeated keys into a first-row table the leader compacts (the first version stays)"),
];
