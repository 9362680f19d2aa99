/**
 * `chaos run --tls`: the run's servers speak only TLS and require a client certificate (mutual TLS), as a production
 * deployment across hosts does, and every process connects through the TLS settings the product documents.
 *
 * - Certificates: a CA, a server certificate for 127.0.0.1 and a client certificate, made by openssl per run in the
 *   run directory (test/helpers/security.ts `makeTestCerts`; keys unencrypted, the directory is the run's own).
 * - NATS: every nats-server requires TLS on its client port and verifies the client's certificate against the CA
 *   (`tls { verify: true }`); the cluster routes between the servers use TLS too, verified both ways, with the server
 *   certificate serving as the route's client certificate (it has no extendedKeyUsage, so it may).
 * - Redis: TLS only (`--port 0 --tls-port …`), client certificates required (`--tls-auth-clients yes`).
 * - Processes: NATSLAKE_NATS_TLS_CA / _CERT / _KEY for every process (nodes, load generators, subscriber, the runner's
 *   own connections through cluster/nats/connect.ts `connectNats`), NATSLAKE_REDIS_TLS_CA / _CERT / _KEY for the
 *   committers (the only processes that talk to Redis), and a `rediss://` URL.
 *
 * One client certificate for every process: it proves the process may reach the servers at all; who it is comes from
 * its credentials (`--auth`: a user per role, chaos/auth.ts), as in the product's documented set-up.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { NATS_AUTH_ENV } from "../cluster/nats/connect-options.ts";
import { REDIS_AUTH_ENV } from "../cluster/redis/connect-options.ts";
import { makeTestCerts, type TestCerts } from "../test/helpers/security.ts";

export interface ChaosTls {
  /** The PEM files (also a CA and a client certificate nobody trusts: what a test shows is refused). */
  readonly certs: TestCerts;
  /** nats-server configuration: TLS with verified client certificates on the client port and on the routes. */
  readonly natsConfig: string;
  /** redis-server's TLS (cluster/local/servers.ts `startRedis`): the TLS port only, client certificates required. */
  readonly redis: { cert: string; key: string; ca: string; authClients: true };
  /** The environment a process connecting to NATS gets: the CA and the client certificate. */
  readonly natsEnv: Record<string, string>;
  /** The environment a process connecting to Redis gets (committers). */
  readonly redisEnv: Record<string, string>;
}

/** A `tls {}` block: `cert`/`key` presented, peers verified against `ca`. */
function tlsBlock(certs: TestCerts, indent: string): string {
  const lines = [`cert_file: ${JSON.stringify(certs.serverCert)}`, `key_file: ${JSON.stringify(certs.serverKey)}`, `ca_file: ${JSON.stringify(certs.ca)}`, "verify: true", "timeout: 5"];
  return `${indent}tls {\n${lines.map((l) => `${indent}  ${l}`).join("\n")}\n${indent}}\n`;
}

/**
 * New certificates for one run, in `<dir>/tls`. The route block carries TLS only: the routes' addresses stay on the
 * command line (test/helpers/nats-cluster.ts), which nats-server merges with the file.
 */
export function newChaosTls(dir: string): ChaosTls {
  const tlsDir = join(dir, "tls");
  mkdirSync(tlsDir, { recursive: true });
  const certs = makeTestCerts(tlsDir);
  return {
    certs,
    natsConfig: `${tlsBlock(certs, "")}cluster {\n${tlsBlock(certs, "  ")}}\n`,
    redis: { cert: certs.serverCert, key: certs.serverKey, ca: certs.ca, authClients: true },
    natsEnv: { [NATS_AUTH_ENV.natsTlsCa]: certs.ca, [NATS_AUTH_ENV.natsTlsCert]: certs.clientCert, [NATS_AUTH_ENV.natsTlsKey]: certs.clientKey },
    redisEnv: { [REDIS_AUTH_ENV.redisTlsCa]: certs.ca, [REDIS_AUTH_ENV.redisTlsCert]: certs.clientCert, [REDIS_AUTH_ENV.redisTlsKey]: certs.clientKey },
  };
}
