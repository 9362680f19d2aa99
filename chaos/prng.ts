/**
 * A small seeded pseudo-random generator (mulberry32): the same seed gives the same fault schedule, so a soak run
 * that found something can be replayed with `--seed`.
 */
import type { Rng } from "./types.ts";

export function createRng(seed: number): Rng {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    seed,
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(items: readonly T[]): T => {
      if (items.length === 0) throw new RangeError("pick from an empty list");
      return items[Math.floor(next() * items.length)]!;
    },
  };
}

/** A fresh seed when none is given (logged and written to the report). */
export const randomSeed = (): number => Math.floor(Math.random() * 2 ** 31);
