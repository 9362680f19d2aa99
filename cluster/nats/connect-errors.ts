/**
 * Saying why a NATS connection was refused, without printing a secret: a URL's password (or token) becomes `***`, and
 * nats.js's authorization and TLS failures become one sentence naming which (no credentials, wrong credentials, an
 * untrusted certificate, TLS required on one side only) and the setting that fixes it.
 */
import { errors as natsErrors } from "@nats-io/transport-node";
import { describeNatsCredentials, withEnvAuth, type NatsAuthSettings } from "./connect-options.ts";

/**
 * The URL (or comma-separated URLs) with the password of each replaced by `***` — and a user part without a password
 * too, since a NATS URL's lone user part is a token (`nats://<token>@host`).
 */
export function redactUrl(url: string): string {
  return url.replace(/(^|\/\/|,\s*)([^/@,\s]+)@/g, (_m, lead: string, userinfo: string) => {
    const colon = userinfo.indexOf(":");
    return `${lead}${colon >= 0 ? `${userinfo.slice(0, colon)}:***` : "***"}@`;
  });
}

/** Every `scheme://userinfo@` in a text (an error message, a log line) with its secret part replaced by `***`. */
export function redactUrlsIn(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)([^/@\s"',]+)@/gi, (_m, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(":");
    return `${scheme}${colon >= 0 ? `${userinfo.slice(0, colon)}:***` : "***"}@`;
  });
}

/** TLS error codes of Node that mean the server's certificate is not trusted by this client. */
const UNTRUSTED_CERT = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_UNTRUSTED",
  "CERT_SIGNATURE_FAILURE",
]);

function chain(e: unknown): Error[] {
  const out: Error[] = [];
  for (let x: unknown = e, depth = 0; x instanceof Error && depth < 8; x = x.cause, depth++) out.push(x);
  return out;
}

/**
 * The message of a failed connection: `cannot connect to NATS at <url>: <why>` for a refusal this module knows (no,
 * wrong or expired credentials, a certificate, TLS on one side only), else `cannot reach NATS at <url>: <error>` —
 * the URL and the error redacted.
 */
export function natsConnectFailureMessage(e: unknown, url: string, settings: NatsAuthSettings, env: NodeJS.ProcessEnv = process.env): string {
  const refusal = explainRefusal(e, url, settings, env);
  if (refusal !== undefined) return `cannot connect to NATS at ${redactUrl(url)}: ${refusal}`;
  const reason = e instanceof Error ? chain(e).map((x) => x.message).join(": ") || e.name : String(e);
  return `cannot reach NATS at ${redactUrl(url)}: ${redactUrlsIn(reason)}`;
}

/** Why the server (or this client's TLS) refused the connection, in one sentence; undefined when it is not a refusal. */
function explainRefusal(e: unknown, url: string, settings: NatsAuthSettings, env: NodeJS.ProcessEnv): string | undefined {
  const errs = chain(e);
  const text = errs.map((x) => x.message).join(": ");
  const code = errs.map((x) => (x as NodeJS.ErrnoException).code).find((c) => typeof c === "string");
  const hasUrlUser = /(^|\/\/|,\s*)[^/@,\s]+@/.test(url);
  const creds = hasUrlUser && describeNatsCredentials(settings, env) === "no credentials" ? "credentials in the URL" : describeNatsCredentials(settings, env);
  if (errs.some((x) => x instanceof natsErrors.UserAuthenticationExpiredError) || /authentication expired/i.test(text)) {
    return `the NATS server refused the credentials: they have expired (${creds}); issue new ones`;
  }
  if (errs.some((x) => x instanceof natsErrors.AuthorizationError) || /authorization violation/i.test(text)) {
    return creds === "no credentials"
      ? "the NATS server requires credentials and none were given: use --nats-creds, --nats-nkey, --nats-user with NATSLAKE_NATS_PASSWORD or --nats-password-file, or NATSLAKE_NATS_TOKEN / --nats-token-file"
      : `the NATS server refused the credentials (authorization violation; ${creds}): wrong or unknown credentials`;
  }
  if (code === "CERT_HAS_EXPIRED") return "the NATS server's TLS certificate has expired";
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") return `the NATS server's TLS certificate is not for this host (${redactUrlsIn(errs[0]!.message)})`;
  if (code !== undefined && UNTRUSTED_CERT.has(code)) {
    return `the NATS server's TLS certificate is not trusted (${code}): give the CA that signed it with --nats-tls-ca <file> (NATSLAKE_NATS_TLS_CA)`;
  }
  if (/certificate required|alert number 116/i.test(text)) {
    return "the NATS server requires a client certificate (mutual TLS): give --nats-tls-cert <file> and --nats-tls-key <file>";
  }
  if (/bad certificate|unknown ca|alert number 4[2-8]/i.test(text)) {
    return `the NATS server refused this client's certificate (${redactUrlsIn(errs[0]!.message)}): is it signed by a CA the server trusts?`;
  }
  if (/tls.*is not available on this server|server does not support '?tls/i.test(text)) {
    return "TLS was asked for (--nats-tls-*, a tls:// URL) but the NATS server does not offer it";
  }
  // Over TLS 1.3 a server that wants a client certificate refuses it after the client's handshake has finished, and
  // nats.js sees no error, only no answer: a timeout over TLS without a client certificate is most likely that.
  const s = withEnvAuth(settings, env);
  if (/timeout/i.test(text) && (s.natsTlsCa !== undefined || s.natsTlsFirst === true || s.natsTlsCert !== undefined || /^tls:\/\//.test(url))) {
    return s.natsTlsCert === undefined
      ? "no answer over TLS: if the server requires a client certificate (mutual TLS), give --nats-tls-cert <file> and --nats-tls-key <file>"
      : "no answer over TLS: the server may have refused this client's certificate (is it signed by a CA the server trusts?)";
  }
  if (/wrong version number|packet length too long|ECONNRESET/i.test(text) && settings.natsTlsFirst === true) {
    return "the NATS server does not accept TLS first (--nats-tls-first needs the server's `handshake_first`)";
  }
  return undefined;
}
