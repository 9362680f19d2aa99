/**
 * A snapshot subscriber in its own process (as a consumer service would run):
 *   node --import tsx test/helpers/subscriber-child.ts <nats-url> <db.table> <duration-ms>
 * Prints one JSON line per notification: {"n": <notification>, "at": <receipt time, epoch ms>}; exits after the
 * duration.
 */
import { connectNats } from "../../cluster/nats/connect.ts";
import { subscribeSnapshots } from "../../cluster/snapshots-client.ts";

const [url, table, duration] = process.argv.slice(2);
if (!url || !table || !duration) {
  process.stderr.write("usage: subscriber-child.ts <nats-url> <db.table> <duration-ms>\n");
  process.exit(2);
}
// Credentials and inbox prefix from the environment (NATSLAKE_NATS_USER, …: the consumer's in `chaos run --auth`).
const nc = await connectNats(url, {});
const sub = await subscribeSnapshots(nc, table, (n) => {
  process.stdout.write(JSON.stringify({ n, at: Date.now() }) + "\n");
});
await new Promise((r) => setTimeout(r, Number(duration)));
sub.stop();
await nc.close();
