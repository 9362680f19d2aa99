#!/usr/bin/env python3
"""Publish rows to a natslake table from Python, with nats-py and msgpack only (no natslake client).

usage: publish.py [--nats nats://127.0.0.1:4222] [--table demo.events] [--format json|msgpack]
                  [--shape row|array|batch] [--batch-size N] [--publisher-id ID] [--prefix lake] < rows.jsonl

Run it in the repository folder while `npm run up` runs, with a Python that has the packages of
examples/python/requirements.txt (the checkout's .venv, which scripts/setup.sh makes, has them):

  .venv/bin/python examples/python/publish.py --table demo.events < examples/data/events.jsonl

Reads one JSON row object per line on stdin and publishes them with JetStream to the table's raw subject
`<prefix>.in.<db>.<table>`, where the table's leader routes them to their buckets exactly once:

  --shape row     one row per message:            {"id": 1, "msg": "hi"}
  --shape array   an array of rows per message:   [{"id": 1, ...}, {"id": 2, ...}]
  --shape batch   a row batch per message:        {"v": 1, "cols": ["id", "msg"], "rows": [[1, "hi"], [2, "yo"]]}

as JSON text or as msgpack (`--format`). The contract of these payloads is schemas/raw-rows.schema.json in the
natslake package. Values take the CLI's input forms (numbers, decimal strings, ISO timestamps or epoch millis;
with msgpack also 64-bit integers and bytes as bin).

Exactly once: every message carries the header `Nats-Msg-Id: <publisher-id>-<n>`, n counting this run's messages
from 1. A publish without an acknowledgement is retried with the same id, and the stream drops a repeat within its
duplicate window (2 minutes by default) — so is a whole run repeated with the same publisher id and input (its
acknowledgements say `duplicate`). Ids must be unique in the table's stream: give each publisher its own id.

Prints one JSON object: {"messages": …, "rows": …, "duplicates": …, "firstSeq": …, "lastSeq": …}. Exit 1 when a
message could not be published (the rows from that message on were not sent).
"""

import argparse
import asyncio
import json
import sys
import uuid

import msgpack
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.errors import APIError

from example_nats import connect  # beside this file: the connection the examples share

RETRIES = 5
ACK_TIMEOUT_S = 5.0


def encode(value, fmt):
    if fmt == "msgpack":
        return msgpack.packb(value, use_bin_type=True)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def shape_payload(rows, shape):
    """The message body for `rows` in the given shape (a single row for `row`)."""
    if shape == "row":
        return rows[0]
    if shape == "array":
        return rows
    cols = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    # A column a row does not have travels as null (natslake rejects that only for NOT NULL columns).
    return {"v": 1, "cols": cols, "rows": [[r.get(c) for c in cols] for r in rows]}


def messages(rows, shape, batch_size, fmt, max_payload):
    """Yields (body, row count), each body within the server's max_payload (a group too large is split in two)."""
    groups = [[r] for r in rows] if shape == "row" else [rows[i:i + batch_size] for i in range(0, len(rows), batch_size)]
    while groups:
        group = groups.pop(0)
        body = encode(shape_payload(group, shape), fmt)
        # Headers and framing need some room too.
        if len(body) + 512 > max_payload:
            if len(group) == 1:
                raise ValueError(f"a row alone is {len(body)} bytes, over the server's max_payload of {max_payload}")
            half = len(group) // 2
            groups[0:0] = [group[:half], group[half:]]
            continue
        yield body, len(group)


async def publish(js, subject, body, msg_id):
    """Publishes with retries under one message id; returns the acknowledgement."""
    last = None
    for attempt in range(RETRIES):
        try:
            return await js.publish(subject, body, timeout=ACK_TIMEOUT_S, headers={"Nats-Msg-Id": msg_id})
        except (NatsTimeoutError, APIError) as e:
            # A refusal that will not change (the stream is full, the subject has no stream) is not retried.
            if isinstance(e, APIError) and e.code not in (None, 503):
                raise
            last = e
            await asyncio.sleep(min(1.0, 0.1 * 2 ** attempt))
    raise last


async def main() -> int:
    ap = argparse.ArgumentParser(description="Publish JSON-lines rows to a natslake table's raw subject.")
    ap.add_argument("--nats", default="nats://127.0.0.1:4222", help="NATS server URL (default: what `npm run up` starts)")
    ap.add_argument("--table", default="demo.events", help="<db>.<table> (default demo.events)")
    ap.add_argument("--format", choices=["json", "msgpack"], default="msgpack")
    ap.add_argument("--shape", choices=["row", "array", "batch"], default="batch")
    ap.add_argument("--batch-size", type=int, default=500, help="rows per message for array and batch (default 500)")
    ap.add_argument("--publisher-id", default=None, help="the message id prefix (default: random, so nothing is de-duplicated across runs)")
    ap.add_argument("--prefix", default="lake")
    a = ap.parse_args()
    if a.table.count(".") != 1:
        print(f"publish.py: the table is <db>.<table>, not '{a.table}'", file=sys.stderr)
        return 2
    if sys.stdin.isatty():
        print("publish.py: reads JSON rows from stdin, one object a line: publish.py ... < examples/data/events.jsonl", file=sys.stderr)
        return 2
    rows = []
    for n, line in enumerate(sys.stdin, 1):
        if line.strip() == "":
            continue
        row = json.loads(line)
        if not isinstance(row, dict):
            print(f"publish.py: line {n} is not a JSON object", file=sys.stderr)
            return 2
        rows.append(row)

    nc = await connect("publish.py", a.nats)
    if nc is None:
        return 1
    js = nc.jetstream()
    subject = f"{a.prefix}.in.{a.table}"
    publisher = a.publisher_id or uuid.uuid4().hex
    out = {"messages": 0, "rows": 0, "duplicates": 0, "firstSeq": None, "lastSeq": None}
    status = 0
    try:
        for body, count in messages(rows, a.shape, a.batch_size, a.format, nc.max_payload):
            ack = await publish(js, subject, body, f"{publisher}-{out['messages'] + 1}")
            out["messages"] += 1
            out["rows"] += count
            out["duplicates"] += 1 if ack.duplicate else 0
            out["firstSeq"] = ack.seq if out["firstSeq"] is None else out["firstSeq"]
            out["lastSeq"] = ack.seq
    except Exception as e:  # report what was sent before the failure
        print(f"publish.py: message {out['messages'] + 1} was not published: {e}", file=sys.stderr)
        status = 1
    finally:
        await nc.close()
    print(json.dumps(out))
    return status


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
