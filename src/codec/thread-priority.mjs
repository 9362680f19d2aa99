/**
 * Lowers the calling thread's CPU priority — for the worker threads of background work (compaction), so they yield
 * the cores to the threads that ingest, commit and deliver. On Linux a thread has its own nice value, and
 * `setpriority` given a thread id changes that thread alone; the thread id is the last part of /proc/thread-self.
 * Plain JavaScript: worker entries import it without a TypeScript loader.
 */
import { readlinkSync } from "node:fs";
import { setPriority } from "node:os";

/**
 * Sets this thread's nice value to `nice` (nothing when it is 0 or less). Best effort: returns why it could not
 * (another OS, no permission), or null when it did.
 */
export function lowerThreadPriority(nice) {
  if (!(nice > 0)) return null;
  try {
    setPriority(Number(readlinkSync("/proc/thread-self").split("/").pop()), nice);
    return null;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}
