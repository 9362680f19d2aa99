/**
 * A loopback HTTP proxy that forwards every request to a real server without some of its headers — in front of an
 * S3 gateway that checks no signatures (SeaweedFS `anonymous`), dropping `If-None-Match` makes a store that ignores
 * conditional puts: a PUT of an existing key overwrites it, as such stores do.
 */
import { createServer, request, type IncomingHttpHeaders } from "node:http";

export interface HeaderStripProxy {
  port: number;
  url: string;
  /** Requests that carried a stripped header. */
  stripped(): number;
  close(): Promise<void>;
}

export async function startHeaderStripProxy(targetPort: number, headers: readonly string[]): Promise<HeaderStripProxy> {
  const drop = new Set(headers.map((h) => h.toLowerCase()));
  let stripped = 0;
  const server = createServer((req, res) => {
    const out: IncomingHttpHeaders = {};
    let hit = false;
    for (const [k, v] of Object.entries(req.headers)) {
      if (drop.has(k)) hit = true;
      else out[k] = v;
    }
    if (hit) stripped++;
    const up = request({ host: "127.0.0.1", port: targetPort, method: req.method, path: req.url, headers: out }, (upRes) => {
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      upRes.pipe(res);
    });
    up.on("error", () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    stripped: () => stripped,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
