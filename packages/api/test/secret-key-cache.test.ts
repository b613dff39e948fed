// The API remembers which environment a secret key opens, but never past a change: rotations,
// deletions and expiries take effect as if nothing were cached (change notices are awaited as
// events, time is an injected clock).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findSecretKey, rotateSecretKey } from "@svc/runtime/engine";
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

  it("caches nothing while it cannot hear change notices", async () => {
    const key = api.project.environments.dev.secretKey;
    const offline = new SecretKeyCache(); // never started: no LISTEN connection
    const lookup = countingLookup(key);
    await offline.environmentFor(key, clock.now(), lookup);
    await offline.environmentFor(key, clock.now(), lookup);
    expect(lookup.calls).toBe(2);
  });
});
