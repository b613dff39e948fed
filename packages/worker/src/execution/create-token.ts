import { callbackUrl, createTokenInTransaction, environmentSigningKey, mintEnvironmentToken, type EngineDeps, type Environment, type Queryable } from "@svc/runtime/engine";
import type { CreatedToken, CreateTokenOptions } from "@svc/runtime/sdk";

/**
 * `wait.createToken` inside a run: the same token service the API uses, without an HTTP hop, in
 * the caller's transaction (the execution records the token in its ledger in the same one).
 */
export function tokenCreator(engine: EngineDeps) {
  return async (tx: Queryable, env: Environment, options: CreateTokenOptions): Promise<CreatedToken> => {
    const { waitpoint, isCached } = await createTokenInTransaction(engine, tx, env.id, {
      ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
      ...(options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {}),
      ...(options.idempotencyKeyTTL !== undefined ? { idempotencyKeyTTL: options.idempotencyKeyTTL } : {}),
      ...(options.tags !== undefined ? { tags: options.tags } : {}),
    });
    const key = await environmentSigningKey(engine, env);
    return {
      id: waitpoint.id,
      url: callbackUrl(engine.apiUrl, waitpoint.id, key),
      isCached,
      publicAccessToken: await mintEnvironmentToken(engine, env, [`write:waitpoints:${waitpoint.id}`], 24 * 3600),
    };
  };
}
