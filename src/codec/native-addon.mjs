/**
 * natslake's Node-API addon (native/parquet/, built by scripts/setup.sh where cargo is installed): where it is and
 * how a thread loads it. The Parquet codec (parquet-native-ops.mjs) and the ingest decoder
 * (actors/ingest/native-decode.ts) both use it. napi-rs addons are context-aware: each worker thread loads its own
 * instance. Plain JavaScript so worker threads need no TypeScript loader; types in native-addon.d.mts.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath, URL } from "node:url";

/**
 * Where scripts/setup.sh puts the built addon: native/parquet/ of the package root, two levels above this file in the
 * sources (src/codec/) and three in the compiled build (dist/src/codec/).
 */
export const ADDON_PATH = [new URL("../../native/parquet/natslake-parquet.node", import.meta.url), new URL("../../../native/parquet/natslake-parquet.node", import.meta.url)]
  .map((url) => fileURLToPath(url))
  .find((path) => existsSync(path)) ?? fileURLToPath(new URL("../../native/parquet/natslake-parquet.node", import.meta.url));

/** The addon's exports; throws when it is not built or does not load (require's error, code MODULE_NOT_FOUND when absent). */
export function requireNativeAddon() {
  return createRequire(import.meta.url)(ADDON_PATH);
}
