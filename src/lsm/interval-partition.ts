/**
 * Paimon's IntervalPartition (release-1.4.2): the files of a compaction unit split into sections — groups whose key
 * ranges chain into one another, with no key range shared between sections — and each section into the fewest
 * sorted runs. A compaction merges one section at a time (its runs are read side by side), and a section of one run
 * holds files no other file overlaps: those are the files a compaction may upgrade instead of rewrite.
 *
 * The algorithm is Java's: files sorted by (minKey, maxKey); a section ends when the next file starts after every
 * key seen so far; within a section, each file joins the run whose last file ends lowest if it starts after that end,
 * else opens a new run (greedy, which is optimal for interval partitioning). The runs are kept in a binary min-heap
 * by the max key of their last file that behaves as java.util.PriorityQueue does (same sift rules, same array order
 * when listed), so a section's runs come out in the order Java hands them to its rewriter.
 */
import type { DataFileMeta } from "../format/manifest.ts";
import type { FramedKeyComparator } from "./levels.ts";

/** A section: its sorted runs, each a list of files in key order. Sections are in key order. */
export type Section = DataFileMeta[][];

/** Splits `files` into sections of overlapping key ranges, each as its fewest sorted runs. */
export function intervalPartition(files: readonly DataFileMeta[], compareKeys: FramedKeyComparator): Section[] {
  const sorted = [...files].sort((a, b) => compareKeys(a.minKey, b.minKey) || compareKeys(a.maxKey, b.maxKey));
  const sections: Section[] = [];
  let section: DataFileMeta[] = [];
  let bound: Uint8Array | null = null;
  for (const f of sorted) {
    if (section.length > 0 && compareKeys(f.minKey, bound!) > 0) {
      sections.push(partitionSection(section, compareKeys));
      section = [];
      bound = null;
    }
    section.push(f);
    if (bound === null || compareKeys(f.maxKey, bound) > 0) bound = f.maxKey;
  }
  if (section.length > 0) sections.push(partitionSection(section, compareKeys));
  return sections;
}

/** The fewest sorted runs of one section's files (given in (minKey, maxKey) order). */
function partitionSection(files: readonly DataFileMeta[], compareKeys: FramedKeyComparator): DataFileMeta[][] {
  const lastMax = (run: DataFileMeta[]): Uint8Array => run[run.length - 1]!.maxKey;
  const heap = new JavaPriorityQueue<DataFileMeta[]>((a, b) => compareKeys(lastMax(a), lastMax(b)));
  heap.add([files[0]!]);
  for (let i = 1; i < files.length; i++) {
    const f = files[i]!;
    // Any run ending below f.minKey would do; the one ending lowest is at the top.
    const top = heap.poll()!;
    if (compareKeys(f.minKey, lastMax(top)) > 0) top.push(f);
    else heap.add([f]);
    heap.add(top);
  }
  return heap.toArray();
}

/**
 * A binary min-heap with java.util.PriorityQueue's sift rules (sift up while strictly smaller than the parent; sift
 * down to the smaller child, the left one on a tie, while strictly larger), so ties land where Java puts them.
 */
class JavaPriorityQueue<T> {
  private readonly items: T[] = [];

  constructor(private readonly compare: (a: T, b: T) => number) {}

  add(x: T): void {
    const q = this.items;
    let k = q.length;
    q.push(x);
    while (k > 0) {
      const parent = (k - 1) >>> 1;
      const p = q[parent]!;
      if (this.compare(x, p) >= 0) break;
      q[k] = p;
      k = parent;
    }
    q[k] = x;
  }

  poll(): T | undefined {
    const q = this.items;
    if (q.length === 0) return undefined;
    const result = q[0]!;
    const x = q.pop()!;
    const n = q.length;
    if (n > 0) {
      let k = 0;
      const half = n >>> 1;
      while (k < half) {
        let child = 2 * k + 1;
        let c = q[child]!;
        const right = child + 1;
        if (right < n && this.compare(c, q[right]!) > 0) c = q[(child = right)]!;
        if (this.compare(x, c) <= 0) break;
        q[k] = c;
        k = child;
      }
      q[k] = x;
    }
    return result;
  }

  /** The elements in array order (Java's iteration and stream order). */
  toArray(): T[] {
    return [...this.items];
  }
}
