import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auth, BadRequestError, configure, NotFoundError, UnprocessableEntityError, wait, WaitpointTimeoutError } from "@trigger.dev/sdk";
import { fireAllDue } from "@svc/runtime/engine";
import { startTestApi, type TestApi } from "./harness.ts";

// The published SDK, unchanged, against svc on a real port.
let api: TestApi;
let baseURL: string;
beforeAll(async () => {
  api = await startTestApi();
  baseURL = await api.app.listen({ port: 0, host: "127.0.0.1" });
  configure({ baseURL, secretKey: api.project.environments.dev.secretKey, requestOptions: { retry: { maxAttempts: 1 } } });
});
afterAll(async () => api?.close());

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe("@trigger.dev/sdk wait.* against svc", () => {
  it("creates tokens with and without options, idempotently", async () => {
    const token = await wait.createToken({ timeout: "1h", idempotencyKey: "sdk-1", idempotencyKeyTTL: "1h", tags: ["sdk-tag", "user:1"] });
    expect(token.id).toMatch(/^waitpoint_/);
    expect(token.isCached).toBe(false);
    expect(token.url).toContain(`/api/v1/waitpoints/tokens/${token.id}/callback/`);
    expect(token.publicAccessToken.split(".")).toHaveLength(3);
    const again = await wait.createToken({ timeout: "1h", idempotencyKey: "sdk-1", idempotencyKeyTTL: "1h", tags: ["sdk-tag"] });
    expect(again).toMatchObject({ id: token.id, isCached: true });

    const plain = await wait.createToken();
    const retrieved = await wait.retrieveToken(plain.id);
    expect(retrieved.timeoutAt!.getTime() - retrieved.createdAt.getTime()).toBe(600_000);

    const dated = await wait.createToken({ timeout: new Date(Date.now() + 3_600_000), tags: "one-tag" });
    expect((await wait.retrieveToken(dated)).tags).toEqual(["one-tag"]);
  });

  it("retrieves, completes and retrieves the output; a second completion changes nothing", async () => {
    const token = await wait.createToken({ tags: ["b-tag", "a-tag"] });
    const waiting = await wait.retrieveToken(token.id);
    expect(waiting).toMatchObject({ id: token.id, url: token.url, status: "WAITING", tags: ["a-tag", "b-tag"], output: undefined, error: undefined });
    expect(waiting.createdAt).toBeInstanceOf(Date);

    expect(await wait.completeToken(token.id, { approved: true, n: 42 })).toEqual({ success: true });
    expect(await wait.completeToken(token, { again: 1 })).toEqual({ success: true });
    const completed = await wait.retrieveToken(token);
    expect(completed).toMatchObject({ status: "COMPLETED", output: { approved: true, n: 42 }, error: undefined });
    expect(completed.completedAt).toBeInstanceOf(Date);
  });

  it("completes a token with its publicAccessToken and through its callback URL", async () => {
    const viaJwt = await wait.createToken();
    await auth.withAuth({ accessToken: viaJwt.publicAccessToken }, () => wait.completeToken(viaJwt.id, { from: "frontend" }));
    expect((await wait.retrieveToken(viaJwt.id)).output).toEqual({ from: "frontend" });

    const viaUrl = await wait.createToken();
    const res = await fetch(baseURL + new URL(viaUrl.url).pathname, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ from: "webhook" }) });
    expect(res.status).toBe(200);
    expect((await wait.retrieveToken(viaUrl.id)).output).toEqual({ from: "webhook" });
  });

  it("surfaces a timed-out token as a WaitpointTimeoutError", async () => {
    const token = await wait.createToken({ timeout: new Date(Date.now() - 1000) });
    await fireAllDue(api.engine, new Date());
    const timedOut = await wait.retrieveToken(token.id);
    expect(timedOut.status).toBe("TIMED_OUT");
    expect(timedOut.output).toBeUndefined();
    expect(timedOut.error).toBeInstanceOf(WaitpointTimeoutError);
    expect(timedOut.error!.message).toMatch(/^Waitpoint timed out at /);
  });

  it("lists tokens with filters and iterates across pages", async () => {
    const completed = await collect(wait.listTokens({ status: "COMPLETED", tags: "a-tag", period: "1h" }));
    expect(completed.length).toBeGreaterThanOrEqual(1);
    expect(completed.every((t) => t.status === "COMPLETED" && t.tags.includes("a-tag"))).toBe(true);

    const byKey = await collect(wait.listTokens({ status: ["WAITING", "COMPLETED"], idempotencyKey: "sdk-1", from: new Date(Date.now() - 3_600_000), to: new Date(Date.now() + 60_000) }));
    expect(byKey.map((t) => t.idempotencyKey)).toEqual(["sdk-1"]);

    const all = await collect(wait.listTokens({ limit: 2 }));
    const { rows } = await api.db.pool.query(`SELECT id FROM waitpoints WHERE environment_id = $1 AND type = 'MANUAL' ORDER BY created_at DESC, id DESC`, [
      api.project.environments.dev.id,
    ]);
    expect(rows.length).toBeGreaterThan(4);
    expect(all.map((t) => t.id)).toEqual(rows.map((r) => r.id));
  });

  it("maps svc's errors onto the SDK's error classes", async () => {
    await expect(wait.retrieveToken("waitpoint_missing")).rejects.toBeInstanceOf(NotFoundError);
    await expect(wait.completeToken("waitpoint_missing", {})).rejects.toBeInstanceOf(NotFoundError);
    await expect(wait.createToken({ timeout: "whenever" })).rejects.toBeInstanceOf(BadRequestError);
    await expect(wait.createToken({ tags: Array.from({ length: 11 }, (_, i) => `t${i}`) })).rejects.toBeInstanceOf(UnprocessableEntityError);
    await expect(collect(wait.listTokens({ period: "24h" }))).rejects.toBeInstanceOf(BadRequestError);
  });
});
