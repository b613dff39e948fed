import { describe, expect, it } from "vitest";
import { StoredDataError } from "@svc/runtime/engine";
import { parseOffer } from "./offers.ts";

const RUN = {
  id: "run_1", environment_id: "env_1", task_identifier: "t", queue_name: "task/t", payload: null, payload_type: "application/json",
  attempt_number: 2, ledger_epoch: 0, max_attempts: null, max_duration_s: null, tags: ["a"], is_test: false, idempotency_key_user: null,
  batch_id: null, trigger_function: "trigger", created_at: "2026-11-24T07:00:00.123456+00:00", updated_at: "2026-11-24T07:00:01+00:00", claim_token: "c1",
  traceparent: null, wait_traceparent: null,
};
const LEDGER_ROW = {
  run_id: "run_1", epoch: 0, step_key: "step:a#1", kind: "step", target: "a", waitpoint_id: null, resolved: true,
  outcome: { ok: true, value: "{}" }, expires_at: null, created_at: "2026-11-24T07:00:00+00:00", resolved_at: null, used_epoch: null,
};

describe("parseOffer", () => {
  it("reads a full offer: the run's columns, its timestamps as Dates, its ledger and the ledger's version", () => {
    const offer = parseOffer(JSON.stringify({ run: RUN, ledger: { version: 3, entries: null } }));
    expect(offer).toMatchObject({ claim: { previousStatus: "WAITING", ledger: [], ledgerVersion: 3, ledgerFrom: "offer", run: { id: "run_1", claim_token: "c1", attempt_number: 2, tags: ["a"] } } });
    const run = (offer as { claim: { run: { created_at: Date; updated_at: Date } } }).claim.run;
    expect(run.created_at.toISOString()).toBe("2026-11-24T07:00:00.123Z");
    expect(run.updated_at.toISOString()).toBe("2026-11-24T07:00:01.000Z");
    const withLedger = parseOffer(JSON.stringify({ run: RUN, ledger: { version: 3, entries: [LEDGER_ROW] } }));
    expect(withLedger).toMatchObject({ claim: { ledger: [{ stepKey: "step:a#1", epoch: 0, kind: "step", resolved: true, outcome: { ok: true, value: "{}" }, expiresAt: null }] } });
    // A completion of a build before migration 0027 (a rolling deploy): the bare entries, version unknown.
    expect(parseOffer(JSON.stringify({ run: RUN, ledger: [LEDGER_ROW] }))).toMatchObject({ claim: { ledger: [{ stepKey: "step:a#1" }], ledgerVersion: null } });
    expect(parseOffer(JSON.stringify({ run: RUN, ledger: null }))).toMatchObject({ claim: { ledger: [], ledgerVersion: null } });
    // Traces on: the run's trace context travels with the offer.
    const wait = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    expect(parseOffer(JSON.stringify({ run: { ...RUN, traceparent: wait, wait_traceparent: wait }, ledger: null }))).toMatchObject({ claim: { run: { traceparent: wait, wait_traceparent: wait } } });
  });

  it("reads an offer that carries only the entries its completion resolved, and the ledger's version", () => {
    const offer = parseOffer(JSON.stringify({ run: RUN, ledger: { version: 4, resolved: [LEDGER_ROW] } }));
    expect(offer).toMatchObject({ resolved: { version: 4, run: { id: "run_1", claim_token: "c1" }, entries: [{ stepKey: "step:a#1", resolved: true }] } });
    expect(parseOffer(JSON.stringify({ run: RUN, ledger: { version: 4, resolved: null } }))).toMatchObject({ resolved: { version: 4, entries: [] } });
  });

  it("reads an offer that names only its claim token", () => {
    expect(parseOffer('{"claimToken":"c1","runId":"run_1"}')).toEqual({ claimToken: "c1", runId: "run_1" });
  });

  it("refuses any other payload with an error that names the mismatch", () => {
    expect(() => parseOffer("not json")).toThrow(/an offer NOTIFY is not JSON/);
    for (const junk of ["null", "42", '"run"', "{}", '{"run":null}', '{"run":{"id":"run_1"}}', '{"claimToken":1,"runId":"r"}']) {
      expect(() => parseOffer(junk)).toThrow(StoredDataError);
    }
    expect(() => parseOffer(JSON.stringify({ run: RUN, ledger: {} }))).toThrow(/an offer NOTIFY does not have the shape svc stores/);
    expect(() => parseOffer(JSON.stringify({ run: RUN, ledger: { version: 1 } }))).toThrow(StoredDataError);
    expect(() => parseOffer(JSON.stringify({ run: RUN, ledger: { version: "1", entries: [] } }))).toThrow(StoredDataError);
    expect(() => parseOffer(JSON.stringify({ run: RUN, ledger: { version: 1, entries: [], resolved: [] } }))).toThrow(StoredDataError);
    expect(() => parseOffer(JSON.stringify({ run: { ...RUN, attempt_number: "2" }, ledger: null }))).toThrow(StoredDataError);
    expect(() => parseOffer(JSON.stringify({ run: { ...RUN, updated_at: "yesterday" }, ledger: null }))).toThrow(/not a timestamp: yesterday/);
    expect(() => parseOffer(JSON.stringify({ run: RUN, ledger: [{ ...LEDGER_ROW, kind: "nap" }] }))).toThrow(StoredDataError);
    expect(() => parseOffer(JSON.stringify({ run: RUN, ledger: { version: 1, resolved: [{ ...LEDGER_ROW, kind: "nap" }] } }))).toThrow(StoredDataError);
  });
});
