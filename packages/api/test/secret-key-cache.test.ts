// The API remembers which environment a secret key opens, but never past a change: rotations,
// deletions and expiries take effect as if nothing were cached (change notices are awaited as
// events, time is an injected clock).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findSecretKey, getEnvironment, rotateSecretKey } from "@svc/runtime/engine";
import { mintPublicToken } from "../src/auth/public-tokens.ts";
import { SecretKeyCache } from "../src/auth/secret-key-cache.ts";
import { bearer } from "./credentials-fixtures.ts";
import { FakeClock, startTestApi, type TestApi } from "./harness.ts";

const clock = new FakeClock(new Date("2026-11-22T10:00:00Z"));
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ clock });
});
afterAll(async () => api?.close());

const cache = () => api.deps.secretKeys!;
function envvars(key: string, slug: string) {
  return api.app.inject({ method: "GET", url: `/api/v1/projects/${api.project.projectRef}/envvars/${slug}`, headers: bearer(key) });
}
/** A lookup that counts its round trips. */
function countingLookup(key: string) {
  const lookup = () => {
    lookup.calls++;
    return findSecretKey(api.db.pool, key, clock.now());
  };
  lookup.calls = 0;
  return lookup;
}

describe("secret key cache", () => {
  it("hears change notices on the process's one LISTEN connection, the one session records arrive on", async () => {
    const { rows } = await api.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'svc-api-listen'`,
    );
    expect(rows[0]!.n).toBe(1);
  });

  it("answers a known key from memory until a change notice drops it", async () => {
    const key = api.project.environments.dev.secretKey;
    const lookup = countingLookup(key);
    const first = await cache().environmentFor(key, clock.now(), lookup);
    const second = await cache().environmentFor(key, clock.now(), lookup);
    expect(second).toEqual(first);
    expect(first?.slug).toBe("dev");
    expect(lookup.calls).toBe(1);
    // Any write to secret_keys NOTIFYs (a trigger); the cache is dropped and the next call looks up.
    const cleared = cache().nextClear();
    await api.db.pool.query(`UPDATE secret_keys SET key_preview = key_preview WHERE environment_id = $1`, [api.project.environments.dev.id]);
    await cleared;
    await cache().environmentFor(key, clock.now(), lookup);
    expect(lookup.calls).toBe(2);
    // Unknown keys are never remembered.
    const unknown = countingLookup("svc_dev_unknown");
    expect(await cache().environmentFor("svc_dev_unknown", clock.now(), unknown)).toBeNull();
    await cache().environmentFor("svc_dev_unknown", clock.now(), unknown);
    expect(unknown.calls).toBe(2);
  });

  it("refuses a key that was in use as soon as a rotation with no grace period is noticed", async () => {
    const env = { id: api.project.environments.staging.id, slug: "staging" as const };
    const oldKey = api.project.environments.staging.secretKey;
    expect((await envvars(oldKey, "staging")).statusCode).toBe(200);
    expect((await envvars(oldKey, "staging")).statusCode).toBe(200); // now from the cache
    const cleared = cache().nextClear();
    const { secretKey } = await rotateSecretKey(api.db.pool, api.engine.secrets, env, clock.now(), 0);
    await cleared;
    expect((await envvars(oldKey, "staging")).statusCode).toBe(401);
    expect((await envvars(secretKey, "staging")).statusCode).toBe(200);
  });

  it("honours the end of a rotation's grace period without any notice", async () => {
    const env = { id: api.project.environments.prod.id, slug: "prod" as const };
    const oldKey = api.project.environments.prod.secretKey;
    const cleared = cache().nextClear();
    await rotateSecretKey(api.db.pool, api.engine.secrets, env, clock.now(), 30_000);
    await cleared;
    expect((await envvars(oldKey, "prod")).statusCode).toBe(200); // cached until the key expires
    clock.advance(30_001);
    expect((await envvars(oldKey, "prod")).statusCode).toBe(401);
  });

  it("verifies a public token once, until a change notice, the token's expiry or its key's: failures are never remembered", async () => {
    const verifications: string[] = [];
    const verified = (name: string, validUntil: Date | null) => async () => {
      verifications.push(name);
      return { principal: name, validUntil };
    };
    const inOneMinute = new Date(clock.now().getTime() + 60_000);
    expect(await cache().verifiedPublicToken("token-a", clock.now(), verified("a", inOneMinute))).toBe("a");
    expect(await cache().verifiedPublicToken("token-a", clock.now(), verified("a", inOneMinute))).toBe("a");
    expect(verifications).toEqual(["a"]);
    // A token that does not verify is tried again every time.
    const refuse = async () => {
      verifications.push("refused");
      throw new Error("invalid");
    };
    await expect(cache().verifiedPublicToken("token-b", clock.now(), refuse)).rejects.toThrow("invalid");
    await expect(cache().verifiedPublicToken("token-b", clock.now(), refuse)).rejects.toThrow("invalid");
    expect(verifications).toEqual(["a", "refused", "refused"]);
    // Until its validity ends (the token's exp, or the first expiry of the keys that verified it)…
    const soon = new Date(clock.now().getTime() + 1_000);
    await cache().verifiedPublicToken("token-c", clock.now(), verified("c", soon));
    clock.advance(1_000);
    await cache().verifiedPublicToken("token-c", clock.now(), verified("c", soon));
    expect(verifications.filter((v) => v === "c")).toHaveLength(2);
    // …or a change to any key or environment.
    const cleared = cache().nextClear();
    await api.db.pool.query(`UPDATE secret_keys SET key_preview = key_preview WHERE environment_id = $1`, [api.project.environments.dev.id]);
    await cleared;
    await cache().verifiedPublicToken("token-a", clock.now(), verified("a", new Date(clock.now().getTime() + 60_000)));
    expect(verifications.filter((v) => v === "a")).toHaveLength(2);
  });

  it("refuses a public token at its expiry, and once its key is rotated away, though it verified before", async () => {
    const env = (await getEnvironment(api.db.pool, api.project.environments.staging.id))!;
    const token = await mintPublicToken(api.deps, env, ["read:runs"], 60);
    const runs = () => api.app.inject({ method: "GET", url: `/api/v1/runs`, headers: bearer(token) }).then((r) => r.statusCode);
    expect(await runs()).toBe(200);
    expect(await runs()).toBe(200); // now from the cache
    clock.advance(60_000);
    expect(await runs()).toBe(401);
    const fresh = await mintPublicToken(api.deps, env, ["read:runs"], 60);
    const runsFresh = () => api.app.inject({ method: "GET", url: `/api/v1/runs`, headers: bearer(fresh) }).then((r) => r.statusCode);
    expect(await runsFresh()).toBe(200);
    const cleared = cache().nextClear();
    await rotateSecretKey(api.db.pool, api.engine.secrets, { id: env.id, slug: "staging" }, clock.now(), 0);
    await cleared;
    expect(await runsFresh()).toBe(401);
  });

  it("caches nothing while it cannot hear change notices", async () => {
    const key = api.project.environments.dev.secretKey;
    const offline = new SecretKeyCache(); // never started: no LISTEN connection
    const lookup = countingLookup(key);
    await offline.environmentFor(key, clock.now(), lookup);
    await offline.environmentFor(key, clock.now(), lookup);
    expect(lookup.calls).toBe(2);
  });
});
