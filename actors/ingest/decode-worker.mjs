/**
 * Entry of an ingest-decoding worker thread (a Piscina pool, actors/ingest/decoder.ts). Plain JavaScript that
 * registers the TypeScript loader itself: however the main thread was started (`--import tsx` or tsx's API in
 * bin/natslake.mjs), loader flags are not passed on to workers. Loaded once per worker thread (~150 ms).
 *
 * in:  a DecodeJob (actors/ingest/decode.ts; its payload buffer transferred)
 * out: an EncodedDecodeOutput; the IPC stream's buffer is transferred back, not copied.
 */
import { register } from "tsx/esm/api";
import { move, transferableSymbol, valueSymbol } from "piscina";

register();
const { decodeJob } = await import("./decode.ts");

export default function decode(job) {
  const out = decodeJob(job);
  if (out.ipc === null) return out;
  return move({
    get [transferableSymbol]() {
      return [out.ipc.buffer];
    },
    get [valueSymbol]() {
      return out;
    },
  });
}
