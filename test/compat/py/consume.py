#!/usr/bin/env python3
"""A natslake consumer in Python: a table's rows over NATS from a reader node (the protocol of
actors/wire/consume.ts), with nats-py and pyarrow only — no warehouse access.

usage: consume.py <nats-url> <db.table> --snapshots N [--from MODE] [--consumer-id ID] [--columns a,b]
                  [--window W] [--prefix P]

Prints one JSON object per row with "_snapshot" (the snapshot that delivered it), then exits after N snapshots
(acknowledging each one once its rows are printed). A refused open prints the reader's reason on stderr, exit 2.
"""

import argparse
import asyncio
import json
import sys

import nats
import pyarrow.ipc as ipc


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("table")
    ap.add_argument("--snapshots", type=int, required=True)
    ap.add_argument("--from", dest="start", default="latest")
    ap.add_argument("--consumer-id")
    ap.add_argument("--columns")
    ap.add_argument("--window", type=int, default=8)
    ap.add_argument("--prefix", default="lake")
    a = ap.parse_args()

    nc = await nats.connect(a.url)
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
    reply = json.loads((await nc.request(f"{a.prefix}.ctl.consume.open", json.dumps(req).encode(), timeout=10)).data)
    if not reply["ok"]:
        print(f"refused: {reply['error']}", file=sys.stderr)
        await nc.close()
        return 2
    control = f"{a.prefix}.ctl.consume.s.{reply['session']}"
    done = 0
    expected = 1
    while done < a.snapshots:
        m = await asyncio.wait_for(queue.get(), timeout=20)
        kind = (m.headers or {}).get("Natslake-Type")
        if kind == "heartbeat":
            await nc.publish(control, b'{"type":"ping"}')
            continue
        if kind == "error":
            print(f"session failed: {m.data.decode()}", file=sys.stderr)
            return 1
        chunk = int(m.headers["Natslake-Chunk"])
        if chunk != expected:
            print(f"chunk {chunk} arrived, {expected} expected", file=sys.stderr)
            return 1
        expected += 1
        snapshot = int(m.headers["Natslake-Snapshot"])
        if m.data:
            for row in ipc.open_stream(m.data).read_all().to_pylist():
                row["_snapshot"] = snapshot
                print(json.dumps(row, default=str))
        # Taken: the reader may send more (flow control).
        await nc.publish(control, json.dumps({"type": "credit", "through": chunk}).encode())
        if m.headers.get("Natslake-Last") == "1":
            sys.stdout.flush()
            ack = json.loads((await nc.request(control, json.dumps({"type": "ack", "snapshotId": snapshot}).encode(), timeout=10)).data)
            if not ack["ok"]:
                print(f"ack refused: {ack}", file=sys.stderr)
                return 1
            done += 1
    await nc.publish(control, b'{"type":"close"}')
    await nc.flush()
    await nc.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
