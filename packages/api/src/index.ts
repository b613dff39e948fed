export { createApp } from "./app.ts";
export type { AppDeps } from "./deps.ts";
export { credentialVerifiers } from "./auth/verifiers.ts";
export { serveApi, type ServedApi } from "./serve.ts";
