#!/usr/bin/env python3
"""Reads a natslake table's rows as they land, in Python: snapshots over NATS from a reader node (the consume
protocol of actors/wire/consume.ts), with nats-py and pyarrow only — no natslake client, no warehouse access.

usage: consume.py [--nats nats://127.0.0.1:4222] [--table demo.events] [--consumer-id example-py] [--from full]
                  [--rows 1000] [--snapshots N] [--timeout 30] [--columns a,b] [--window 8] [--prefix lake] [--jsonl]

Run it in the repository folder while `npm run up` runs, with a Python that has the packages of
examples/python/requirements.txt (the checkout's .venv, which scripts/setup.sh makes, has them):

  .venv/bin/python examples/python/consume.py --table demo.events --consumer-id example-py

--from is where a consumer without progress starts: `full` (the table as of the latest snapshot, then each new
snapshot's rows), `latest` (only snapshots from now on), `snapshot:N`, `time:<ISO time>`. Each snapshot is
acknowledged once all its rows were received; with a consumer id that progress is durable (Paimon's consumer file),
so the next run resumes after the last acknowledged snapshot, whatever --from says.

Prints a line per snapshot (its id, `full` or `delta`, its row count, its first row), then a summary. With --jsonl,
every row goes to stdout as a JSON object with "_snapshot" (the snapshot that delivered it) and those lines to
stderr. Stops after the snapshot that brings the rows received to --rows or more, after --snapshots snapshots, or
after --timeout seconds — whichever comes first (exit 0; the summary says which). A refused open prints the reader's
reason on stderr, exit 2; a failed session or a reader gone silent, exit 1.
"""

import argparse
import asyncio
import json
import sys
import time

import pyarrow.ipc as ipc

from example_nats import connect  # beside this file: the connection the examples share

# The reader sends a heartbeat every second while it has nothing else to send: this long without one, it is gone.
READER_SILENT_S = 10


async def main() -> int:
    ap = argparse.ArgumentParser(description="Consume a natslake table's rows over NATS.")
    ap.add_argument("--nats", default="nats://127.0.0.1:4222", help="NATS server URL (default: what `npm run up` starts)")
    ap.add_argument("--table", default="demo.events", help="<db>.<table> (default demo.events)")
    ap.add_argument("--consumer-id", default="example-py", help="durable progress under this id (default example-py)")
    ap.add_argument("--from", dest="start", default="full", help="where a consumer without progress starts (default full)")
    ap.add_argument("--rows", type=int, default=1000, help="stop after the snapshot that reaches this many rows (default 1000)")
    ap.add_argument("--snapshots", type=int, default=None, help="stop after this many snapshots")
    ap.add_argument("--timeout", type=float, default=30, help="stop after this many seconds (default 30)")
    ap.add_argument("--columns", help="a,b: only these columns, in this order")
    ap.add_argument("--window", type=int, default=8, help="chunks in flight at most (default 8)")
    ap.add_argument("--prefix", default="lake")
    ap.add_argument("--jsonl", action="store_true", help="every row as a JSON line on stdout; the other lines on stderr")
    a = ap.parse_args()
    for flag, value in (("--rows", a.rows), ("--snapshots", a.snapshots or 1), ("--timeout", a.timeout), ("--window", a.window)):
        if value <= 0:
            ap.error(f"{flag} must be positive, got {value}")
    report = sys.stderr if a.jsonl else sys.stdout

    nc = await connect("consume.py", a.nats)
    if nc is None:
        return 1
    try:
        return await consume(nc, a, report)
    finally:
        await nc.close()


async def consume(nc, a, report) -> int:
    inbox = nc.new_inbox()
    queue: asyncio.Queue = asyncio.Queue()

    async def on_message(m):
        await queue.put(m)

    await nc.subscribe(inbox, cb=on_message)
    req = {"type": "consume-open", "v": 1, "table": a.table, "inbox": inbox, "from": a.start, "window": a.window}
    if a.consumer_id:
        req["consumerId"] = a.consumer_id
    if a.columns:
        req["projection"] = a.columns.split(",")
    try:
        reply = json.loads((await nc.request(f"{a.prefix}.ctl.consume.open", json.dumps(req).encode(), timeout=10)).data)
    except Exception as e:
        print(f"consume.py: no reader node answered ({e}); is a node with the reader role running?", file=sys.stderr)
        return 1
    if not reply["ok"]:
        print(f"refused: {reply['error']}", file=sys.stderr)
        return 2
    print(f"consuming {a.table} as consumer {a.consumer_id} (from {a.start} unless it has progress) through reader {reply['reader']}", file=report)
    control = f"{a.prefix}.ctl.consume.s.{reply['session']}"
    deadline = time.monotonic() + a.timeout
    rows = snapshots = 0
    acked = None
    expected = 1
    in_snapshot = 0
    first = None
    why = None
    while why is None:
        left = deadline - time.monotonic()
        try:
            m = await asyncio.wait_for(queue.get(), timeout=max(0.0, min(left, READER_SILENT_S)))
        except asyncio.TimeoutError:
            if time.monotonic() >= deadline:
                why = f"--timeout {a.timeout:g} s passed"
                break
            print(f"consume.py: reader {reply['reader']} silent for {READER_SILENT_S} s", file=sys.stderr)
            return 1
        kind = (m.headers or {}).get("Natslake-Type")
        if kind == "heartbeat":
            await nc.publish(control, b'{"type":"ping"}')
            continue
        if kind == "error":
            print(f"consume.py: the session failed: {m.data.decode()}", file=sys.stderr)
            return 1
        chunk = int(m.headers["Natslake-Chunk"])
        if chunk != expected:
            # Core NATS dropped one (this example does not open a new session as the natslake client does).
            print(f"consume.py: chunk {chunk} arrived, {expected} expected", file=sys.stderr)
            return 1
        expected += 1
        snapshot = int(m.headers["Natslake-Snapshot"])
        if m.data:
            batch_rows = ipc.open_stream(m.data).read_all().to_pylist()
            in_snapshot += len(batch_rows)
            if first is None and batch_rows:
                first = batch_rows[0]
            if a.jsonl:
                for row in batch_rows:
                    row["_snapshot"] = snapshot
                    print(json.dumps(row, default=str))
        # Taken: the reader may send more (flow control).
        await nc.publish(control, json.dumps({"type": "credit", "through": chunk}).encode())
        if m.headers.get("Natslake-Last") == "1":
            sys.stdout.flush()
            # Every row of the snapshot was received: record it (a restart resumes after it).
            ack = json.loads((await nc.request(control, json.dumps({"type": "ack", "snapshotId": snapshot}).encode(), timeout=10)).data)
            if not ack["ok"]:
                print(f"consume.py: the acknowledgement was refused: {ack}", file=sys.stderr)
                return 1
            acked = snapshot
            snapshots += 1
            rows += in_snapshot
            shown = f", first {json.dumps(first, default=str)}" if first is not None else ""
            print(f"snapshot {snapshot} ({m.headers.get('Natslake-Kind')}): {in_snapshot} rows{shown}; acknowledged", file=report)
            in_snapshot, first = 0, None
            if rows >= a.rows:
                why = f"reached --rows {a.rows}"
            elif a.snapshots is not None and snapshots >= a.snapshots:
                why = f"reached --snapshots {a.snapshots}"
    await nc.publish(control, b'{"type":"close"}')
    await nc.flush()
    progress = f"acknowledged through snapshot {acked}" if acked is not None else "nothing new to acknowledge"
    print(f"received {rows} rows in {snapshots} snapshot(s); {progress}; stopped: {why}", file=report)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
