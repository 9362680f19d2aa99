/** Thread priorities of a process, read from /proc (Linux): for tests of what runs at a lowered CPU priority. */
import { readdirSync, readFileSync } from "node:fs";

/** The nice value of one thread (field 19 of /proc/<pid>/task/<tid>/stat). */
export function threadNice(pid: number | "self", tid: number | string): number {
  const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
}

/** The nice value of each thread of a process (threads that end meanwhile are left out). */
export function threadNices(pid: number | "self"): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((tid) => {
    try {
      return [threadNice(pid, tid)];
    } catch {
      return [];
    }
  });
}
