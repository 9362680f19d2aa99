/**
 * How a worker thread's plain-JavaScript entry loads the TypeScript module behind it: the compiled `.js` beside the
 * module in a build (dist/), else the `.ts` source through the TypeScript loader, which the worker registers itself
 * (loader flags are not passed on to workers; registered once per thread). Plain JavaScript: worker entries import it
 * without a loader.
 */
import { existsSync } from "node:fs";
import { URL } from "node:url";

let registered = null;

/** The module whose source is `sourceUrl` (a URL of its `.ts` file): its compiled `.js` when there is one. */
export async function importCompiledOrSource(sourceUrl) {
  const compiled = new URL(sourceUrl.href.replace(/\.ts$/, ".js"));
  if (existsSync(compiled)) return import(compiled.href);
  registered ??= import("tsx/esm/api").then(({ register }) => register());
  await registered;
  return import(sourceUrl.href);
}
