"""The NATS connection the Python examples share: a wrong URL or a server that is down fails in seconds with one
line (nats-py's defaults retry for two minutes and print a traceback per attempt).

Credentials and TLS come from the same environment variables as natslake's own commands (docs/operations/security.md):
NATSLAKE_NATS_CREDS, NATSLAKE_NATS_NKEY (files; nats-py needs the `nkeys` package for them), NATSLAKE_NATS_USER with
NATSLAKE_NATS_PASSWORD or NATSLAKE_NATS_PASSWORD_FILE, NATSLAKE_NATS_TOKEN or NATSLAKE_NATS_TOKEN_FILE,
NATSLAKE_NATS_TLS_CA, NATSLAKE_NATS_TLS_CERT and NATSLAKE_NATS_TLS_KEY, NATSLAKE_NATS_TLS_FIRST; and the inbox prefix of
NATSLAKE_INBOX_PREFIX, which a user of natslake's generated permissions needs (`_INBOX.<user>`, docs/operations/permissions.md)."""

import os
import re
import ssl
import sys

import nats


def _secret(value_var, file_var):
    path = os.environ.get(file_var)
    if path:
        with open(path, encoding="utf-8") as f:
            return f.read().rstrip("\r\n")
    return os.environ.get(value_var) or None


def auth_options():
    """nats-py connect() options from the NATSLAKE_NATS_* environment and NATSLAKE_INBOX_PREFIX (files are read, secrets never printed)."""
    env = os.environ
    opts = {}
    if env.get("NATSLAKE_NATS_CREDS"):
        opts["user_credentials"] = env["NATSLAKE_NATS_CREDS"]
    if env.get("NATSLAKE_NATS_NKEY"):
        opts["nkeys_seed"] = env["NATSLAKE_NATS_NKEY"]
    if env.get("NATSLAKE_NATS_USER"):
        opts["user"] = env["NATSLAKE_NATS_USER"]
        opts["password"] = _secret("NATSLAKE_NATS_PASSWORD", "NATSLAKE_NATS_PASSWORD_FILE")
    if env.get("NATSLAKE_INBOX_PREFIX"):
        # Replies and consume sessions arrive under it: the only inboxes such a user may subscribe to.
        opts["inbox_prefix"] = env["NATSLAKE_INBOX_PREFIX"]
    token = _secret("NATSLAKE_NATS_TOKEN", "NATSLAKE_NATS_TOKEN_FILE")
    if token:
        opts["token"] = token
    ca, cert, key = env.get("NATSLAKE_NATS_TLS_CA"), env.get("NATSLAKE_NATS_TLS_CERT"), env.get("NATSLAKE_NATS_TLS_KEY")
    tls_first = env.get("NATSLAKE_NATS_TLS_FIRST", "").lower() in ("1", "true", "yes", "on")
    if ca or cert or tls_first:
        ctx = ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
        if cert:
            ctx.load_cert_chain(cert, key)
        opts["tls"] = ctx
        if tls_first:
            opts["tls_handshake_first"] = True
    return opts


def redact(url):
    """The URL without its password (or token)."""
    return re.sub(r"(//)([^/@,\s]+)@", lambda m: m.group(1) + (m.group(2).split(":")[0] + ":***" if ":" in m.group(2) else "***") + "@", url)


async def connect(script, url):
    """A connection to `url`, or None after printing why there is none."""

    async def on_error(e):
        print(f"{script}: nats: {e}", file=sys.stderr)

    try:
        opts = auth_options()
    except (OSError, ssl.SSLError) as e:
        print(f"{script}: cannot use the NATS credentials or TLS files (NATSLAKE_NATS_*): {e}", file=sys.stderr)
        return None
    try:
        return await nats.connect(url, max_reconnect_attempts=1, error_cb=on_error, **opts)
    except ModuleNotFoundError as e:
        print(f"{script}: NATS credentials files need the nkeys package (pip install nkeys): {e}", file=sys.stderr)
        return None
    except Exception as e:
        reason = "the server refused the credentials" if "authorization" in str(e).lower() else str(e)
        print(f"{script}: cannot reach NATS at {redact(url)} (is `npm run up` running?): {reason}", file=sys.stderr)
        return None
