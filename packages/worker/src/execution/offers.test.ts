import { describe, expect, it } from "vitest";
import { parseOffer } from "./offers.ts";

describe("parseOffer", () => {
  it("reads a full offer: the run's columns, its timestamps as Dates, its ledger", () => {
    const offer = parseOffer(JSON.stringify({
      run: { id: "run_1", claim_token: "c1", created_at: "2026-11-24T07:00:00.123456+00:00", updated_at: "2026-11-24T07:00:01+00:00", attempt_number: 2, tags: ["a"] },
      ledger: null,
    }));
    expect(offer).toMatchObject({ claim: { previousStatus: "WAITING", ledger: [], run: { id: "run_1", claim_token: "c1", attempt_number: 2, tags: ["a"] } } });
    const run = (offer as { claim: { run: { created_at: Date; updated_at: Date } } }).claim.run;
    expect(run.created_at.toISOString()).toBe("2026-11-24T07:00:00.123Z");
    expect(run.updated_at.toISOString()).toBe("2026-11-24T07:00:01.000Z");
  });

  it("reads an offer that names only its claim token", () => {
    expect(parseOffer('{"claimToken":"c1","runId":"run_1"}')).toEqual({ claimToken: "c1", runId: "run_1" });
  });

  it("ignores whatever else arrives on the channel", () => {
    for (const junk of ["", "not json", "null", "42", '"run"', "{}", '{"run":null}', '{"run":{"id":"run_1"}}', '{"run":{"id":"r","claim_token":"c"},"ledger":{}}', '{"claimToken":1,"runId":"r"}']) {
      expect(parseOffer(junk)).toBeNull();
    }
  });
});
