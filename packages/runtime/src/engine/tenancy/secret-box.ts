import { createCipheriv, createDecipheriv, createHash, hash, randomBytes } from "node:crypto";

/**
 * Reversible encryption for secrets we must read back (secret keys, env var values):
 * AES-256-GCM under the server key from config. Output: base64(iv | tag | ciphertext).
 */
export class SecretBox {
  readonly #key: Buffer;
  constructor(serverKey: string) {
    // Any string works as a server key; it is stretched to 32 bytes.
    this.#key = createHash("sha256").update(serverKey).digest();
  }
  encrypt(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64");
  }
  decrypt(sealed: string): string {
    const raw = Buffer.from(sealed, "base64");
    const decipher = createDecipheriv("aes-256-gcm", this.#key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
  }
}

/** One-shot (crypto.hash): no hash object per call, on every authenticated request's path. */
export function sha256Hex(value: string): string {
  return hash("sha256", value, "hex");
}
