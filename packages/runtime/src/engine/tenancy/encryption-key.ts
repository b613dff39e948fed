import { z } from "zod";

/**
 * Values that are placeholders, not keys: what a sample configuration ships with. A server started
 * with one would encrypt every secret key and env var under a key anyone can read in our docs.
 */
const PLACEHOLDER = /change[-_ ]?me|changeit|placeholder|replace[-_ ]?(me|this|with)|your[-_ ]?(key|secret)|example|^(x+|0+|secret|password|test)$/i;

/** Why `key` cannot be the server's encryption key, or null when it can. */
export function encryptionKeyProblem(key: string): string | null {
  if (key.length < 16) return "SVC_ENCRYPTION_KEY must be at least 16 characters";
  if (PLACEHOLDER.test(key)) return "SVC_ENCRYPTION_KEY is a placeholder; set a long random value (e.g. `openssl rand -base64 32`) and keep it: it decrypts the stored secret keys and env vars";
  if (new Set(key).size < 6) return "SVC_ENCRYPTION_KEY is too repetitive to be a key; use a long random value (e.g. `openssl rand -base64 32`)";
  return null;
}

/** SVC_ENCRYPTION_KEY in a configuration schema (API, worker, CLI). */
export const EncryptionKey = z.string().superRefine((key, context) => {
  const problem = encryptionKeyProblem(key);
  if (problem) context.addIssue({ code: "custom", message: problem });
});
