export { createTestDatabase, type TestDatabase } from "./database.ts";
export { ledgerRow, listenForResumes, resumeDue, waitingRunOn } from "./waits.ts";
