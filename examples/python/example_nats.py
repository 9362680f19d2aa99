"""The NATS connection the Python examples share: a wrong URL or a server that is down fails in seconds with one
line (nats-py's defaults retry for two minutes and print a traceback per attempt)."""

import sys

import nats


async def connect(script, url):
    """A connection to `url`, or None after printing why there is none."""

    async def on_error(e):
        print(f"{script}: nats: {e}", file=sys.stderr)

    try:
        return await nats.connect(url, max_reconnect_attempts=1, error_cb=on_error)
    except Exception as e:
        print(f"{script}: cannot reach NATS at {url} (is `npm run up` running?): {e}", file=sys.stderr)
        return None
