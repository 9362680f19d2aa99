import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { NODE_SEMI_SPACE_FLAG, nodeProcessEnv } from "../../../cluster/local/node-env.ts";

test("node processes get two malloc arenas and a smaller young generation unless the environment chooses", () => {
  const plain = nodeProcessEnv({ PATH: "/bin" });
  assert.equal(plain.MALLOC_ARENA_MAX, "2");
  assert.equal(plain.NODE_OPTIONS, NODE_SEMI_SPACE_FLAG);
  assert.equal(plain.PATH, "/bin");
  // Other NODE_OPTIONS are kept, the flag added after them.
  assert.equal(nodeProcessEnv({ NODE_OPTIONS: "--enable-source-maps" }).NODE_OPTIONS, `--enable-source-maps ${NODE_SEMI_SPACE_FLAG}`);
  // The operator's own choices win.
  const own = nodeProcessEnv({ MALLOC_ARENA_MAX: "4", NODE_OPTIONS: "--max-semi-space-size=32" });
  assert.equal(own.MALLOC_ARENA_MAX, "4");
  assert.equal(own.NODE_OPTIONS, "--max-semi-space-size=32");
});

test("a Node process started with that environment grows its young generation to half of Node's default bound", () => {
  // Allocates objects that live a little while (so scavenges keep growing the young generation) and prints the
  // largest young-generation size seen.
  const churn =
    "const v8 = require('node:v8'); const keep = []; let max = 0;" +
    "for (let i = 0; i < 200; i++) { const a = []; for (let j = 0; j < 20000; j++) a.push({ j, s: 'x' + j }); keep.push(a); if (keep.length > 20) keep.shift();" +
    "const s = v8.getHeapSpaceStatistics().find((x) => x.space_name === 'new_space'); if (s.space_size > max) max = s.space_size; }" +
    "process.stdout.write(String(max));";
  const youngMax = (env: NodeJS.ProcessEnv): number => {
    const out = spawnSync(process.execPath, ["-e", churn], { env, encoding: "utf8" });
    assert.equal(out.status, 0, out.stderr);
    return Number(out.stdout);
  };
  const asIs = youngMax({ PATH: process.env.PATH });
  const bounded = youngMax(nodeProcessEnv({ PATH: process.env.PATH }));
  assert.ok(bounded > 0 && bounded <= asIs / 2, `young generation grew to ${bounded} bytes with the flag, ${asIs} without`);
});
