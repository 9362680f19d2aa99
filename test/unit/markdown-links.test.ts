/**
 * Every Markdown file of the repository (tracked by git, or new and not ignored; node_modules and test fixtures left
 * out) links only to files, directories and headings that exist, and its external links are well-formed URLs (no
 * network). The checker (test/helpers/markdown-links.ts) is first shown to find each kind of broken link in files
 * made for it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { checkLinks, type LinkProblem, type Repository } from "../helpers/markdown-links.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

function fixture(markdown: Record<string, string>, other: Record<string, string> = {}): Repository {
  const all = { ...markdown, ...other };
  return {
    markdown: new Map(Object.entries(markdown)),
    files: new Set(Object.keys(all)),
    lineCount: (p) => (all[p] ?? "").split("\n").length,
  };
}

const brokenLinks = (problems: LinkProblem[]): string[] => problems.map((p) => `${p.file}:${p.line} ${p.link}`);

test("markdown links - the checker accepts what resolves and finds each kind of broken link", () => {
  const good = fixture(
    {
      "README.md": [
        "# natslake",
        "## Quick start: `natslake up` — in 5 minutes!",
        "## Quick start: `natslake up` — in 5 minutes!",
        '<a id="custom"></a>',
        "[self](#natslake) [dup](#quick-start-natslake-up--in-5-minutes-1) [html](#custom) [guide](docs/guide.md#the-options)",
        "[dir](docs/) [root](/src/a.ts#L2-L3) [img](docs/pic.png) [ext](https://nats.io/docs?x=1#y) [mail](mailto:a@b.io) [local](http://127.0.0.1:8222/varz) [compose](http://prometheus:9090/)",
        "[ref link][r]",
        "",
        "[r]: docs/guide.md",
        "",
        "`[not a link](nowhere.md)`",
        "",
        "```sh",
        "[not a link either](nowhere.md)",
        "```",
      ].join("\n"),
      "docs/guide.md": "# Guide\n\n### The *options*\n\n[back](../README.md#natslake) [escaped](../README.md#quick-start-natslake-up--in-5-minutes)\n",
    },
    { "src/a.ts": "1\n2\n3\n", "docs/pic.png": "" },
  );
  assert.deepEqual(brokenLinks(checkLinks(good)), []);

  const bad = fixture(
    {
      "README.md": [
        "# Top",
        "[file](docs/missing.md) [anchor](#nope) [other anchor](docs/guide.md#nope) [lines](src/a.ts#L9)",
        "[outside](../elsewhere.md) [scheme](ftp://x.org/f) [host](https://-bad-.com) [no host](http://) [empty]()",
        "[ref][r]",
        '<img src="docs/missing.png">',
        "",
        "[r]: docs/gone.md",
      ].join("\n"),
      "docs/guide.md": "# Guide\n",
    },
    { "src/a.ts": "1\n2\n" },
  );
  const found = checkLinks(bad);
  assert.deepEqual(
    found.map((p) => p.link),
    ["docs/missing.md", "#nope", "docs/guide.md#nope", "src/a.ts#L9", "../elsewhere.md", "ftp://x.org/f", "https://-bad-.com", "http://", "", "docs/gone.md", "docs/missing.png"],
    JSON.stringify(found, null, 1),
  );
  assert.deepEqual(
    found.map((p) => p.line),
    [2, 2, 2, 2, 3, 3, 3, 3, 3, 4, 5],
    "each at its own line",
  );
  assert.ok(found.every((p) => p.file === "README.md" && p.problem !== ""));
});

test("markdown links - every relative link and anchor of the repository's Markdown resolves; external links are well-formed", () => {
  const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })
    .split("\0")
    .filter((f) => f !== "" && !f.split("/").includes("node_modules"));
  // Test fixtures are data, not documentation: a generated page's expected text links where that page is published
  // (test/fixtures/bench/page.md is docs/benchmarks.md), not where the fixture lies.
  const isFixture = (f: string): boolean => f.startsWith("test/fixtures/");
  // A file deleted in the work tree but still in the index is gone.
  const files = new Set(listed.filter((f) => existsSync(join(ROOT, f))));
  const markdown = new Map([...files].filter((f) => f.endsWith(".md") && !isFixture(f)).map((f) => [f, readFileSync(join(ROOT, f), "utf8")]));
  assert.ok(markdown.has("README.md") && markdown.size >= 5, `the repository's Markdown is found (${markdown.size} files)`);
  const problems = checkLinks({ markdown, files, lineCount: (p) => readFileSync(join(ROOT, p), "utf8").split("\n").length });
  assert.deepEqual(
    problems.map((p) => `${p.file}:${p.line}: ${p.link} — ${p.problem}`),
    [],
    `${problems.length} broken link(s) in the repository's Markdown`,
  );
});
