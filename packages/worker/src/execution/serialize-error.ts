/** An error as stored on a run or attempt (errors that cross the database are data). */
export interface SerializedError {
  type: "user" | "internal";
  name: string;
  message: string;
  stackTrace?: string;
  code?: string;
}

export function serializeError(error: unknown): SerializedError {
  if (error instanceof Error) {
    return { type: "user", name: error.name, message: error.message, ...(error.stack ? { stackTrace: error.stack } : {}) };
  }
  return { type: "user", name: "Error", message: typeof error === "string" ? error : JSON.stringify(error) ?? String(error) };
}

export function internalError(code: string, message: string): SerializedError {
  return { type: "internal", name: code, code, message };
}
