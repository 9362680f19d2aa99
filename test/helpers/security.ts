/**
 * What the authentication tests configure real servers with: certificates made by openssl (a CA, a server
 * certificate for 127.0.0.1, a client certificate, and a second CA nobody trusts), nkeys, and NATS operator-mode JWTs
 * (an operator, an account with JetStream, a user: the claims nats-server reads, signed with the issuer's nkey —
 * `nsc` does not install here, so these are made as nats-server's `resolver: MEMORY` expects them).
 */
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { createAccount, createOperator, createUser, type KeyPair } from "@nats-io/nkeys";

export interface TestCerts {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A CA that signed nothing the servers use: a client trusting only it refuses them. */
  otherCa: string;
  /** A client certificate signed by `otherCa`: servers refuse it. */
  strangerCert: string;
  strangerKey: string;
}

function openssl(dir: string, ...args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
}

function makeCa(dir: string, name: string): void {
  openssl(dir, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", `/CN=${name}`, "-keyout", `${name}.key`, "-out", `${name}.pem`);
}

function makeSigned(dir: string, name: string, ca: string, ext: string): void {
  openssl(dir, "req", "-newkey", "rsa:2048", "-nodes", "-subj", `/CN=${name}`, "-keyout", `${name}.key`, "-out", `${name}.csr`);
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(dir, "x509", "-req", "-in", `${name}.csr`, "-CA", `${ca}.pem`, "-CAkey", `${ca}.key`, "-CAcreateserial", "-days", "2", "-extfile", `${name}.ext`, "-out", `${name}.pem`);
}

/** Writes the certificates into `dir` (a second or two of openssl). */
export function makeTestCerts(dir: string): TestCerts {
  makeCa(dir, "ca");
  makeCa(dir, "other-ca");
  // No extendedKeyUsage: the server's certificate also serves as a client's (the start-up probe of a mutual-TLS Redis).
  makeSigned(dir, "server", "ca", "subjectAltName = IP:127.0.0.1, DNS:localhost\n");
  makeSigned(dir, "client", "ca", "extendedKeyUsage = clientAuth\n");
  makeSigned(dir, "stranger", "other-ca", "extendedKeyUsage = clientAuth\n");
  const p = (f: string): string => join(dir, f);
  return {
    ca: p("ca.pem"),
    serverCert: p("server.pem"),
    serverKey: p("server.key"),
    clientCert: p("client.pem"),
    clientKey: p("client.key"),
    otherCa: p("other-ca.pem"),
    strangerCert: p("stranger.pem"),
    strangerKey: p("stranger.key"),
  };
}

const b64url = (b: Uint8Array | string): string => Buffer.from(b).toString("base64url");

/** A NATS JWT: `claims` (with `nats`) issued by `issuer` about `subject`, signed with the issuer's nkey (ed25519). */
function natsJwt(issuer: KeyPair, subject: string, name: string, nats: Record<string, unknown>): string {
  const header = b64url(JSON.stringify({ typ: "JWT", alg: "ed25519-nkey" }));
  const claims: Record<string, unknown> = { iat: Math.floor(Date.now() / 1000), iss: issuer.getPublicKey(), name, sub: subject, nats: { ...nats, version: 2 } };
  claims["jti"] = createHash("sha256").update(JSON.stringify(claims)).update(randomBytes(8)).digest("base64url").slice(0, 52).toUpperCase();
  const payload = b64url(JSON.stringify(claims));
  const sig = issuer.sign(new TextEncoder().encode(`${header}.${payload}`));
  return `${header}.${payload}.${b64url(sig)}`;
}

/** A credentials file as `nsc generate creds` writes it: the user's JWT and its nkey seed. */
export function credsFile(jwt: string, seed: Uint8Array): string {
  return [
    "-----BEGIN NATS USER JWT-----",
    jwt,
    "------END NATS USER JWT------",
    "",
    "************************* IMPORTANT *************************",
    "NKEY Seed printed below can be used to sign and prove identity.",
    "",
    "-----BEGIN USER NKEY SEED-----",
    new TextDecoder().decode(seed),
    "------END USER NKEY SEED------",
    "",
  ].join("\n");
}

export interface OperatorSetup {
  /** nats-server configuration lines: the operator, the memory resolver with the account preloaded. */
  serverConfig: string;
  /** A user of the account (credentials file text). */
  userCreds: string;
  /** A user signed by an account the server does not know. */
  strangerCreds: string;
}

/** An operator, its system account, one account with JetStream and a user of it; and a user of an account that is not preloaded. */
export function makeOperatorSetup(): OperatorSetup {
  const operator = createOperator();
  const system = createAccount();
  const account = createAccount();
  const unknownAccount = createAccount();
  const unlimited = { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1, mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 };
  const operatorJwt = natsJwt(operator, operator.getPublicKey(), "natslake-test-operator", { type: "operator" });
  const accountJwt = natsJwt(operator, account.getPublicKey(), "lake", { type: "account", limits: unlimited });
  // JetStream needs the server's system account.
  const systemJwt = natsJwt(operator, system.getPublicKey(), "SYS", { type: "account", limits: { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 } });
  const user = (acc: KeyPair): string => {
    const u = createUser();
    const jwt = natsJwt(acc, u.getPublicKey(), "lake-user", { type: "user", pub: {}, sub: {}, subs: -1, data: -1, payload: -1 });
    return credsFile(jwt, u.getSeed());
  };
  return {
    serverConfig: `operator: ${operatorJwt}\nsystem_account: ${system.getPublicKey()}\nresolver: MEMORY\nresolver_preload: {\n  ${system.getPublicKey()}: ${systemJwt}\n  ${account.getPublicKey()}: ${accountJwt}\n}\n`,
    userCreds: user(account),
    strangerCreds: user(unknownAccount),
  };
}
