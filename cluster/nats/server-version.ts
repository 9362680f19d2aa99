/**
 * The oldest nats-server natslake supports, and the check a node runs against the server it connected to.
 * Below 2.10: a stream is registered before its store exists, so a message read racing a stream create panics the
 * server (SIGSEGV in jsMsgGetRequest, seen with Debian's 2.9.10), and near a stream's max_bytes acknowledged
 * messages can be deleted (nats-io/nats-server#4771).
 */
export const MIN_NATS_SERVER: readonly [number, number] = [2, 10];

/** Why `version` (e.g. "2.9.10", from the server's INFO) is unsupported, or undefined when it is fine or unknown. */
export function unsupportedNatsServer(version: string | undefined): string | undefined {
  const m = /^v?(\d+)\.(\d+)/.exec(version ?? "");
  if (!m) return undefined;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  const [minMajor, minMinor] = MIN_NATS_SERVER;
  if (major > minMajor || (major === minMajor && minor >= minMinor)) return undefined;
  return (
    `nats-server ${version} is older than the supported ${minMajor}.${minMinor}: it can crash when a stream is read while ` +
    `it is being created, and can delete acknowledged messages near a stream's max_bytes (nats-io/nats-server#4771); upgrade it`
  );
}
