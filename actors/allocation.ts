/**
 * Bucket allocation (Akka's "allocation strategy"): a pure policy that, given the live writer nodes and the current
 * assignment, decides where unowned buckets go and which buckets should move to even the load. Least-buckets:
 * every node ends up with ⌊N/k⌋ or ⌈N/k⌉ buckets; at most `maxMovesPerRound` moves per round, so a joining node
 * takes buckets over gradually and hand-offs never pile up.
 */
export interface AllocationInput {
  buckets: number;
  /** Live writer nodes that accept buckets (not draining), in a stable order. */
  nodes: string[];
  /** Current owner of each bucket (absent: unowned or its owner is gone). */
  owners: ReadonlyMap<number, string>;
  /**
   * Buckets not to assign now although their owner is not among `nodes`: their owner is alive but draining, and hands
   * them over itself (revoke → flush → release); assigning them at once would skip that hand-off.
   */
  held?: ReadonlySet<number>;
  maxMovesPerRound: number;
}

export interface AllocationPlan {
  /** Unowned buckets → the node that takes them now. */
  assign: Map<number, string>;
  /** Owned buckets that should move (hand-off: revoke first) → the node that will take them. */
  move: Map<number, string>;
}

export function planAllocation(input: AllocationInput): AllocationPlan {
  const assign = new Map<number, string>();
  const move = new Map<number, string>();
  if (input.nodes.length === 0) return { assign, move };
  const load = new Map<string, number[]>(input.nodes.map((n) => [n, []]));
  for (let b = 0; b < input.buckets; b++) {
    const o = input.owners.get(b);
    if (o !== undefined && load.has(o)) load.get(o)!.push(b);
  }
  const leastLoaded = (): string => {
    let best = input.nodes[0]!;
    for (const n of input.nodes) if (load.get(n)!.length < load.get(best)!.length) best = n;
    return best;
  };
  for (let b = 0; b < input.buckets; b++) {
    const o = input.owners.get(b);
    if ((o === undefined || !load.has(o)) && input.held?.has(b) !== true) {
      const n = leastLoaded();
      assign.set(b, n);
      load.get(n)!.push(b);
    }
  }
  // Rebalance: move from the most loaded to the least loaded while they differ by more than one.
  for (let i = 0; i < input.maxMovesPerRound; i++) {
    let most = input.nodes[0]!;
    for (const n of input.nodes) if (load.get(n)!.length > load.get(most)!.length) most = n;
    const least = leastLoaded();
    if (load.get(most)!.length - load.get(least)!.length <= 1) break;
    const candidates = load.get(most)!.filter((b) => !assign.has(b) && !move.has(b));
    const b = candidates[candidates.length - 1];
    if (b === undefined) break;
    move.set(b, least);
    load.set(most, load.get(most)!.filter((x) => x !== b));
    load.get(least)!.push(b);
  }
  return { assign, move };
}
