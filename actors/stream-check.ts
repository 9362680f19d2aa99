/**
 * The actors' side of stream identity (src/commit/stream-identity.ts): whether a table's committed offsets may be used
 * on its live ingest stream, and the metric every refusal counts in.
 */
import { checkStream, resetHint, type LiveStream, type StreamCheck } from "../src/commit/stream-identity.ts";
import type { NatslakeState } from "../src/format/snapshot.ts";

/** Checks the chain's natslake state against the live stream; a refusal's reason ends with the way out. */
export function checkTableStream(table: string, chain: NatslakeState | null, live: LiveStream): StreamCheck {
  let maxOffset = 0;
  for (const p of chain?.buckets.values() ?? []) maxOffset = Math.max(maxOffset, Number(p.offset));
  const check = checkStream(chain?.stream, maxOffset, live);
  return check.ok ? check : { ok: false, reason: `${table}: ${check.reason}; ${resetHint(table)}` };
}

/** How long a refusing writer or router waits before it looks again (an operator may have reset the offsets). */
export const STREAM_RECHECK_MS = 5000;
