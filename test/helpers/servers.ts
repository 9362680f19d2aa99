/** Real servers for integration tests: the same launcher `natslake up` uses (cluster/local/servers.ts). */
export { freePort, startNats, startRedis, type ServerHandle, type NatsOptions, type RedisOptions } from "../../cluster/local/servers.ts";

/** Whether a process with this pid is still running (signal 0 checks without sending anything). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
