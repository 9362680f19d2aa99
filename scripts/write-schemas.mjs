#!/usr/bin/env node
// `npm run schemas`: writes the wire contracts (actors/wire/schemas.ts, actors/wire/contracts.ts) as JSON Schemas,
// `schemas/<name>.schema.json`, and the subject index `schemas/subjects.json`, which the package publishes.
// test/unit/actors/wire-schemas.test.ts fails while the files differ from what this would write.
// Run with the TypeScript loader: node --import tsx scripts/write-schemas.mjs
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { publishedSchemaFiles } from "../actors/wire/published.ts";

const dir = fileURLToPath(new URL("../schemas", import.meta.url));
mkdirSync(dir, { recursive: true });
const files = publishedSchemaFiles();
// Files of schemas that no longer exist go too.
for (const f of readdirSync(dir)) if (f.endsWith(".json") && !(f in files)) rmSync(join(dir, f));
for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
console.log(`schemas: wrote ${Object.keys(files).length} files to schemas/`);
