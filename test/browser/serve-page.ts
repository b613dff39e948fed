import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

/** A page a test serves to the browser: its address (on `localhost`, another origin than the API's 127.0.0.1) and a way to stop serving it. */
export interface ServedPage {
  url: string;
  close(): Promise<void>;
}

/**
 * Bundles a React page (`entry`, a .tsx file) as an application's bundler does — the SDK's
 * Node-only transports (S2 over HTTP/2) stay unresolved imports that the browser never reaches —
 * and serves it with an empty HTML document that loads it.
 */
export async function servePage(entry: URL): Promise<ServedPage> {
  const bundle = await build({
    entryPoints: [fileURLToPath(entry)],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    external: ["node:*"],
    jsx: "automatic",
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "silent",
  });
  const script = bundle.outputFiles[0]!.text;
  const server = createServer((req, res) => {
    if (req.url === "/app.js") res.writeHead(200, { "content-type": "text/javascript" }).end(script);
    else res.writeHead(200, { "content-type": "text/html" }).end(`<!doctype html><div id="root"></div><script type="module" src="/app.js"></script>`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://localhost:${(server.address() as AddressInfo).port}/`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
