/**
 * The leader SIGKILLed at each commit failpoint: after the manifests (`commit.after-manifests`), after the manifest
 * lists (`commit.after-manifest-lists`), right before the snapshot (`commit.before-snapshot`), after the snapshot
 * before the LATEST hint (`commit.after-snapshot`), after the snapshot before rejections, the notification and the
 * purges (`committer.after-snapshot`). The failpoint is armed on the standby committer only; the leader is then
 * drained so the armed node leads and dies at its N-th pass. Expected: the other committer takes over within the
 * lease TTL, re-reads the committables, commits what the dead leader did not (and nothing it did twice), and
 * publishes the notifications it missed.
 *
 * `committer-failpoints` runs all five in one topology (the CI subset); `leader-kill@<point>` runs one.
 */
import { COMMIT_FAILPOINTS, committerFailpointFault } from "../faults.ts";
import type { Scenario } from "../types.ts";

export const scenarios: Scenario[] = [
  {
    name: "committer-failpoints",
    description: "the leader SIGKILLs itself at each commit failpoint in turn (armed on the standby, leadership handed over)",
    ci: true,
    defaultDurationMs: 40_000,
    async run(ctx) {
      await ctx.sleep(3000);
      for (const point of COMMIT_FAILPOINTS) {
        await committerFailpointFault(ctx, point);
        await ctx.sleep(1000); // each fault already waits for the victim's restart and its buckets' hand-back
      }
    },
  },
  ...COMMIT_FAILPOINTS.map(
    (point): Scenario => ({
      name: `leader-kill@${point}`,
      description: `the leader SIGKILLs itself at ${point}`,
      suite: false,
      defaultDurationMs: 30_000,
      async run(ctx) {
        await ctx.sleep(3000);
        await committerFailpointFault(ctx, point);
      },
    }),
  ),
];
