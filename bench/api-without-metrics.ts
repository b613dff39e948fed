// The API process with its metrics left out (no registry, no request timing, no GET /metrics):
// the "off" side of the metrics scenario. Operators always run packages/api/src/main.ts.
import { serveApi } from "../packages/api/src/serve.ts";

await serveApi(process.env, { metrics: false });
