// What backends import from "@svc/worker".
export { connectEngine, type ConnectEngineOptions, type EngineConnection } from "./connect-engine.ts";
export { createWorker, type Worker } from "./worker.ts";
export type { WorkerOptions } from "./worker-options.ts";
export { WorkerEvents } from "./events.ts";
export { tokenCreator } from "./execution/create-token.ts";
export { loadTasks } from "./tasks/load-tasks.ts";
export { registerTypeScriptLoader } from "./tasks/typescript-loader.ts";
export { serveWorker, type ServedWorker } from "./serve.ts";
