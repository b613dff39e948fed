#!/usr/bin/env node
// The API process. `svc api` runs the same; see serve.ts.
import { serveApi } from "./serve.ts";

await serveApi(process.env);
