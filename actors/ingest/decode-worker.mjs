/**
 * Entry of an ingest-decoding worker thread (a Piscina pool, actors/ingest/decoder.ts). Plain JavaScript: in the
 * compiled build (dist/, `npm run build`) it loads decode.js next to it; from the sources it registers the
 * TypeScript loader itself (however the main thread was started — `--import tsx` or tsx's API in bin/natslake.mjs —
 * loader flags are not passed on to workers; ~150 ms once per worker thread).
 *
 * in:  a DecodeJob (actors/ingest/decode.ts; its payload buffer transferred)
 * out: an EncodedDecodeOutput; the IPC stream's buffer is transferred back, not copied.
 */
import { existsSync } from "node:fs";
import { URL } from "node:url";
import { move, transferableSymbol, valueSymbol } from "piscina";

const compiled = new URL("./decode.js", import.meta.url);
let decodeJob;
if (existsSync(compiled)) ({ decodeJob } = await import(compiled.href));
else {
  const { register } = await import("tsx/esm/api");
  register();
  ({ decodeJob } = await import(new URL("./decode.ts", import.meta.url).href));
}

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
