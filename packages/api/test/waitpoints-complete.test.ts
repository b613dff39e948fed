import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callbackUrl, issueSecretKey } from "@svc/runtime/engine";
import { startTestApi, type TestApi } from "./harness.ts";
import { completeRequest, createTokenOk, createTokenRequest, ledgerRow, resumeDue, listenForResumes, tokenRow, waitingRunOn } from "./waitpoints-helpers.ts";

let api: TestApi;
let resumes: Awaited<ReturnType<typeof listenForResumes>>;
beforeAll(async () => {
  api = await startTestApi();
  resumes = await listenForResumes(api.db.url);
});
afterAll(async () => {
  await resumes?.close();
  await api?.close();
});

/** POSTs to a callback URL the way an external service would: no Authorization header. */
function postCallback(url: string, payload?: string, contentType?: string) {
  const path = new URL(url).pathname;
  return api.app.inject({ method: "POST", url: path, headers: contentType ? { "content-type": contentType } : {}, ...(payload !== undefined ? { payload } : {}) });
}

describe("POST /api/v1/waitpoints/tokens/{id}/complete", () => {
  it("completes a token with the SDK's { data } body and stores the output as JSON text", async () => {
    const token = await createTokenOk(api);
    const res = await completeRequest(api, token.id, { data: { approved: true, n: 42 } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true });
    const row = await tokenRow(api, token.id);
    expect(row).toMatchObject({ status: "COMPLETED", output: '{"approved":true,"n":42}', output_type: "application/json", output_is_error: false });
    expect(row.completed_at).toBeInstanceOf(Date);
  });

  it("accepts the spec's { output } body, which wins over { data }, and JSON-encodes strings", async () => {
    const a = await createTokenOk(api);
    await completeRequest(api, a.id, { output: "yes" });
    expect((await tokenRow(api, a.id)).output).toBe('"yes"');
    const b = await createTokenOk(api);
    await completeRequest(api, b.id, { output: { from: "output" }, data: { from: "data" } });
    expect((await tokenRow(api, b.id)).output).toBe('{"from":"output"}');
  });

  it("completes with no output for an empty object body", async () => {
    const token = await createTokenOk(api);
    expect((await completeRequest(api, token.id, {})).statusCode).toBe(200);
    expect(await tokenRow(api, token.id)).toMatchObject({ status: "COMPLETED", output: null });
  });

  it("keeps the first completion: a second one answers 200 and changes nothing", async () => {
    const token = await createTokenOk(api);
    await completeRequest(api, token.id, { data: "first" });
    const before = await tokenRow(api, token.id);
    const again = await completeRequest(api, token.id, { data: "second" });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual({ success: true });
    expect(await tokenRow(api, token.id)).toEqual(before);
  });

  it("lets exactly one of 50 concurrent completions win and resumes the waiting run once", async () => {
    const token = await createTokenOk(api);
    const envId = api.project.environments.dev.id;
    const runId = await waitingRunOn(api.db.pool, envId, token.id);
    const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => completeRequest(api, token.id, { data: { i } })));
    expect(responses.every((r) => r.statusCode === 200 && r.json().success === true)).toBe(true);
    const row = await tokenRow(api, token.id);
    expect(row.status).toBe("COMPLETED");
    const winner = JSON.parse(row.output).i;
    expect(winner).toBeGreaterThanOrEqual(0);
    expect(await resumeDue(api.db.pool, runId)).toBe(true);
    expect(await resumes.count(runId)).toBe(1);
    const ledger = await ledgerRow(api.db.pool, runId);
    expect(ledger.resolved).toBe(true);
    expect(ledger.outcome).toMatchObject({ ok: true, output: JSON.stringify({ i: winner }) });
  });

  it("answers 404 for an unknown token or another environment's token, 400 for a malformed id", async () => {
    const unknown = await completeRequest(api, "waitpoint_doesnotexist", { data: 1 });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: "Waitpoint not found" });
    const prodToken = (await createTokenRequest(api, {}, { authorization: `Bearer ${api.project.environments.prod.secretKey}` })).json();
    expect((await completeRequest(api, prodToken.id, { data: 1 })).statusCode).toBe(404);
    expect((await tokenRow(api, prodToken.id)).status).toBe("WAITING");
    expect((await completeRequest(api, "run_abc", { data: 1 })).statusCode).toBe(400);
  });

  it("answers a missing or malformed body with 400 and a missing credential with 401", async () => {
    const token = await createTokenOk(api);
    const empty = await api.app.inject({ method: "POST", url: `/api/v1/waitpoints/tokens/${token.id}/complete`, headers: { ...api.devAuth, "content-type": "application/json" } });
    expect(empty.statusCode).toBe(400);
    expect(empty.json()).toEqual({ error: "Request body is empty" });
    const noBody = await api.app.inject({ method: "POST", url: `/api/v1/waitpoints/tokens/${token.id}/complete`, headers: api.devAuth });
    expect(noBody.statusCode).toBe(400);
    expect((await completeRequest(api, token.id, [1, 2])).statusCode).toBe(400);
    const badJson = await api.app.inject({
      method: "POST",
      url: `/api/v1/waitpoints/tokens/${token.id}/complete`,
      headers: { ...api.devAuth, "content-type": "application/json" },
      payload: "{",
    });
    expect(badJson.statusCode).toBe(400);
    expect((await completeRequest(api, token.id, { data: 1 }, {})).statusCode).toBe(401);
    expect((await tokenRow(api, token.id)).status).toBe("WAITING");
  });
});

describe("POST /api/v1/waitpoints/tokens/{id}/complete with the token's publicAccessToken", () => {
  it("completes its own token and no other", async () => {
    const token = await createTokenOk(api);
    const other = await createTokenOk(api);
    const auth = { authorization: `Bearer ${token.publicAccessToken}` };
    const forbidden = await completeRequest(api, other.id, { data: 1 }, auth);
    expect(forbidden.statusCode).toBe(403);
    expect((await tokenRow(api, other.id)).status).toBe("WAITING");
    const ok = await completeRequest(api, token.id, { data: { from: "browser" } }, auth);
    expect(ok.statusCode).toBe(200);
    expect(await tokenRow(api, token.id)).toMatchObject({ status: "COMPLETED", output: '{"from":"browser"}' });
  });

  it("rejects a tampered token with 401", async () => {
    const token = await createTokenOk(api);
    const tampered = token.publicAccessToken.slice(0, -4) + (token.publicAccessToken.endsWith("AAAA") ? "BBBB" : "AAAA");
    expect((await completeRequest(api, token.id, { data: 1 }, { authorization: `Bearer ${tampered}` })).statusCode).toBe(401);
  });
});

describe("POST to a token's callback URL", () => {
  it("needs no auth header and stores the whole JSON body as the output", async () => {
    const token = await createTokenOk(api);
    const res = await postCallback(token.url, JSON.stringify({ status: "approved", by: { user: 7 } }), "application/json");
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true });
    expect(await tokenRow(api, token.id)).toMatchObject({ status: "COMPLETED", output: '{"status":"approved","by":{"user":7}}' });
  });

  it("stores {} for an empty body, with or without a JSON content type", async () => {
    for (const contentType of [undefined, "application/json"]) {
      const token = await createTokenOk(api);
      const res = await postCallback(token.url, undefined, contentType);
      expect(res.statusCode, String(contentType)).toBe(200);
      expect((await tokenRow(api, token.id)).output).toBe("{}");
    }
  });

  it("stores a JSON string body as that string, not parsed a second time", async () => {
    const token = await createTokenOk(api);
    const res = await postCallback(token.url, '"approved"', "application/json");
    expect(res.statusCode).toBe(200);
    expect((await tokenRow(api, token.id)).output).toBe('"approved"');
  });

  it("reads JSON sent with another content type (curl -d sends a form type)", async () => {
    const token = await createTokenOk(api);
    const res = await postCallback(token.url, '{"ok":1}', "application/x-www-form-urlencoded");
    expect(res.statusCode).toBe(200);
    expect((await tokenRow(api, token.id)).output).toBe('{"ok":1}');
  });

  it("answers a body that is not JSON with 400 and leaves the token waiting", async () => {
    const token = await createTokenOk(api);
    expect((await postCallback(token.url, "approved!", "text/plain")).statusCode).toBe(400);
    expect((await postCallback(token.url, "{approved", "application/json")).statusCode).toBe(400);
    expect((await tokenRow(api, token.id)).status).toBe("WAITING");
  });

  it("answers a wrong hash with 401 and an unknown token with 404", async () => {
    const token = await createTokenOk(api);
    const other = await createTokenOk(api);
    const otherHash = other.url.split("/").pop()!;
    const wrong = await api.app.inject({ method: "POST", url: `/api/v1/waitpoints/tokens/${token.id}/callback/${otherHash}`, payload: {} });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json()).toEqual({ error: "Invalid URL, hash doesn't match" });
    expect((await api.app.inject({ method: "POST", url: `/api/v1/waitpoints/tokens/${token.id}/callback/abc`, payload: {} })).statusCode).toBe(401);
    const unknown = await api.app.inject({ method: "POST", url: `/api/v1/waitpoints/tokens/waitpoint_nope/callback/${otherHash}`, payload: {} });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: "Waitpoint not found" });
    expect((await tokenRow(api, token.id)).status).toBe("WAITING");
  });

  it("answers 200 and changes nothing when the token is already completed", async () => {
    const token = await createTokenOk(api);
    await completeRequest(api, token.id, { data: "first" });
    const res = await postCallback(token.url, '{"late":true}', "application/json");
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ success: true });
    expect((await tokenRow(api, token.id)).output).toBe('"first"');
  });

  it("keeps URLs minted under a rotated key working until that key expires", async () => {
    const env = api.project.environments.staging;
    const stagingAuth = { authorization: `Bearer ${env.secretKey}` };
    const a = (await createTokenRequest(api, {}, stagingAuth)).json();
    const b = (await createTokenRequest(api, {}, stagingAuth)).json();
    // Rotate: a newer key signs new URLs; the old one stays valid for a grace period.
    await issueSecretKey(api.db.pool, api.engine.secrets, { id: env.id, slug: "staging" });
    expect((await postCallback(a.url, "{}", "application/json")).statusCode).toBe(200);
    await api.db.pool.query(`UPDATE secret_keys SET expires_at = now() - interval '1 second' WHERE environment_id = $1 AND expires_at IS NULL AND key_hash = encode(sha256($2::bytea), 'hex')`, [env.id, env.secretKey]);
    expect((await postCallback(b.url, "{}", "application/json")).statusCode).toBe(401);
    expect(callbackUrl("http://svc.test", b.id, env.secretKey)).toBe(b.url);
  });

  it("signs a preview branch's URLs with the parent preview key", async () => {
    const preview = api.project.environments.preview;
    const { rows } = await api.db.pool.query<{ id: string }>(
      `INSERT INTO environments (id, project_id, slug, type, parent_environment_id, branch_name)
       SELECT 'env_branch_feat_cb', project_id, 'preview', 'PREVIEW', id, 'feat-cb' FROM environments WHERE id = $1 RETURNING id`,
      [preview.id],
    );
    const branchAuth = { authorization: `Bearer ${preview.secretKey}`, "x-trigger-branch": "feat-cb" };
    const token = (await createTokenRequest(api, {}, branchAuth)).json();
    expect((await tokenRow(api, token.id)).environment_id).toBe(rows[0]!.id);
    expect(token.url).toBe(callbackUrl("http://svc.test", token.id, preview.secretKey));
    expect((await postCallback(token.url, '{"branch":true}', "application/json")).statusCode).toBe(200);
    expect((await tokenRow(api, token.id)).output).toBe('{"branch":true}');
    const second = (await createTokenRequest(api, {}, branchAuth)).json();
    expect((await completeRequest(api, second.id, { data: 1 }, { authorization: `Bearer ${second.publicAccessToken}` })).statusCode).toBe(200);
  });
});
