import { callbackUrl, createTokenInTransaction, environmentSigningKey, signEnvironmentToken, type EngineDeps, type Environment, type Queryable } from "@svc/runtime/engine";
import type { CreatedToken, CreateTokenOptions } from "@svc/runtime/sdk";

/**
 * `wait.createToken` inside a run: the same token service the API uses, without an HTTP hop. Two
 * steps: what needs the pool (the environment's signing key) is read first; the token is then
 * created in the caller's transaction (the execution records it in its ledger in the same one),
 * which must not wait for a second pool connection while it holds one.
 */
export function tokenCreator(engine: EngineDeps) {
  return async (env: Environment, options: CreateTokenOptions): Promise<(tx: Queryable) => Promise<CreatedToken>> => {
    const key = await environmentSigningKey(engine, env);
    return async (tx) => {
      const { waitpoint, isCached } = await createTokenInTransaction(engine, tx, env.id, {
        ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
        ...(options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {}),
        ...(options.idempotencyKeyTTL !== undefined ? { idempotencyKeyTTL: options.idempotencyKeyTTL } : {}),
        ...(options.tags !== undefined ? { tags: options.tags } : {}),
      });
      return {
        id: waitpoint.id,
        url: callbackUrl(engine.apiUrl, waitpoint.id, key),
        isCached,
        publicAccessToken: await signEnvironmentToken(key, engine.clock.now(), env, [`write:waitpoints:${waitpoint.id}`], 24 * 3600),
      };
    };
  };
}
