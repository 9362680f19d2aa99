// `npm run docs:reference`: writes the reference pages of docs/reference/ from the code they document
// (scripts/reference/). test/unit/docs-reference.test.ts fails while the committed pages differ from what this writes.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { REFERENCE_DIR, referencePages } from "./reference/pages.ts";

const dir = fileURLToPath(new URL(`../${REFERENCE_DIR}`, import.meta.url));
mkdirSync(dir, { recursive: true });
const pages = await referencePages();
// A page that is no longer generated goes too.
for (const f of readdirSync(dir)) if (f.endsWith(".md") && !(f in pages)) rmSync(join(dir, f));
for (const [name, text] of Object.entries(pages)) writeFileSync(join(dir, name), text);
console.log(`docs:reference: wrote ${Object.keys(pages).length} pages to ${REFERENCE_DIR}/`);
