/**
 * Validates messages against the JSON Schemas the package publishes (the files in `schemas/`, read as a user of the
 * package would read them, not regenerated), with ajv in strict mode.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { REPO_ROOT } from "./python.ts";

export const SCHEMAS_DIR = join(REPO_ROOT, "schemas");

export interface WireValidator {
  /** The schema names (files `<name>.schema.json`). */
  names: string[];
  /** null when `value` is valid, else ajv's errors as one line. */
  check(name: string, value: unknown): string | null;
}

export function wireValidator(): WireValidator {
  // The encoding annotation is natslake's own keyword: declared, so strict mode accepts it.
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  ajv.addVocabulary(["x-natslake-encoding"]);
  const validators = new Map<string, ValidateFunction>();
  for (const f of readdirSync(SCHEMAS_DIR)) {
    if (!f.endsWith(".schema.json")) continue;
    validators.set(f.slice(0, -".schema.json".length), ajv.compile(JSON.parse(readFileSync(join(SCHEMAS_DIR, f), "utf8")) as object));
  }
  return {
    names: [...validators.keys()],
    check(name, value) {
      const v = validators.get(name);
      if (v === undefined) return `no schema named ${name}`;
      return v(value) ? null : ajv.errorsText(v.errors, { dataVar: name });
    },
  };
}
