#!/usr/bin/env node
// The worker process. `svc worker` runs the same; see serve.ts.
import { serveWorker } from "./serve.ts";

await serveWorker(process.env);
