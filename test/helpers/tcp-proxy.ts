/**
 * A loopback TCP proxy in front of a real server that can lose one exchange, to produce the outcomes a network
 * gives: `drop-response` forwards a matching request to the server and closes the client's connection instead of
 * passing the answer back (the request took effect, the caller cannot know); `drop-request` closes the connection
 * without forwarding it (nothing happened, the caller cannot know either). Requests are matched on their first bytes
 * (the HTTP request line and headers).
 */
import { createServer, connect, type Server, type Socket } from "node:net";

export type Fault = "drop-response" | "drop-request";

export interface TcpProxy {
  port: number;
  url: string;
  /** The next request whose head matches `match` meets `fault` (once). */
  arm(fault: Fault, match: RegExp): void;
  /** How many faults fired. */
  fired(): number;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  let armed: { fault: Fault; match: RegExp } | null = null;
  let fired = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    const upstream = connect({ port: targetPort, host: "127.0.0.1" });
    sockets.add(upstream);
    let dropResponse = false;
    client.on("data", (chunk: Buffer) => {
      if (armed !== null && armed.match.test(chunk.toString("latin1", 0, Math.min(chunk.length, 4096)))) {
        const { fault } = armed;
        armed = null;
        fired++;
        if (fault === "drop-request") {
          client.destroy();
          upstream.destroy();
          return;
        }
        dropResponse = true;
      }
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (dropResponse) {
        // The server has the whole request (it answers): hang up on the client without the answer.
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    arm: (fault, match) => {
      armed = { fault, match };
    },
    fired: () => fired,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
