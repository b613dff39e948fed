import { describe, expect, it } from "vitest";
import { ValidationError } from "@svc/runtime/engine";
import { DEFAULT_RUN_LIST_WINDOW_MS, resolveRunListFilters } from "./run-list-filters.ts";

const now = new Date("2026-03-10T12:00:00.000Z");

describe("resolveRunListFilters", () => {
  it("applies the 7-day window only when no period, from or to is given", () => {
    expect(resolveRunListFilters({}, now)).toEqual({ createdFrom: new Date(now.getTime() - DEFAULT_RUN_LIST_WINDOW_MS) });
    expect(resolveRunListFilters({ to: "1000" }, now)).toEqual({ createdTo: new Date(1000) });
    expect(resolveRunListFilters({ period: "1h" }, now).createdFrom).toEqual(new Date(now.getTime() - 3_600_000));
  });

  it("reads from/to as epoch milliseconds or dates", () => {
    expect(resolveRunListFilters({ from: "1700000000000", to: "2026-01-01" }, now)).toEqual({
      createdFrom: new Date(1_700_000_000_000),
      createdTo: new Date("2026-01-01"),
    });
  });

  it("maps legacy statuses and names every invalid one", () => {
    expect(resolveRunListFilters({ status: ["FROZEN", "WAITING", "INTERRUPTED"], period: "1d" }, now).statuses).toEqual(["WAITING", "FAILED"]);
    expect(() => resolveRunListFilters({ status: ["QUEUED", "pending", "X"] }, now)).toThrow(/Invalid status values: pending, X/);
  });

  it("keeps list filters, drops empty ones and parses isTest", () => {
    expect(resolveRunListFilters({ tag: ["a"], taskIdentifier: [], isTest: "false", period: "7d" }, now)).toMatchObject({ tags: ["a"], isTest: false });
    expect(resolveRunListFilters({ tag: ["a"], taskIdentifier: [], period: "7d" }, now)).not.toHaveProperty("taskIdentifiers");
  });

  it("lists a bulk action's runs from any time (a period still narrows), each id once; refuses what is no bulk action id", () => {
    expect(resolveRunListFilters({ bulkAction: ["bulk_abc", "bulk_def", "bulk_abc"] }, now)).toEqual({ bulkActionIds: ["bulk_abc", "bulk_def"] });
    expect(resolveRunListFilters({ bulkAction: ["bulk_abc"], period: "1h" }, now).createdFrom).toEqual(new Date(now.getTime() - 3_600_000));
    expect(resolveRunListFilters({ bulkAction: [] }, now)).toEqual({ createdFrom: new Date(now.getTime() - DEFAULT_RUN_LIST_WINDOW_MS) });
    expect(() => resolveRunListFilters({ bulkAction: ["bulk_ok", "run_abc", "BULK_X"] }, now)).toThrow(/filter\[bulkAction\]: "run_abc", "BULK_X" are not bulk action ids/);
  });

  it("rejects unparseable periods and dates with a ValidationError naming the parameter", () => {
    expect(() => resolveRunListFilters({ period: "soon" }, now)).toThrow(ValidationError);
    expect(() => resolveRunListFilters({ period: "0d" }, now)).toThrow(/filter\[createdAt\]\[period\]/);
    expect(() => resolveRunListFilters({ from: "not a date" }, now)).toThrow(/filter\[createdAt\]\[from\]/);
  });
});
