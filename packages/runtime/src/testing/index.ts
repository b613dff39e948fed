export { createTestDatabase, type TestDatabase } from "./database.ts";
