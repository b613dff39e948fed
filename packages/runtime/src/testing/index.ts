export { createTestDatabase, type TestDatabase } from "./database.ts";
export {
  connectTestEngine, noDispatch, wakeDispatcher, TEST_ENCRYPTION_KEY,
  type ConnectedEngine, type DispatcherFactory, type EngineDatabase, type TestDispatcher, type TestEngineOptions,
} from "./connect-engine.ts";
export { startTestEngine, type TestEngine } from "./engine.ts";
export { ledgerRow, listenForResumes, resumeDue, waitingRunOn } from "./waits.ts";
