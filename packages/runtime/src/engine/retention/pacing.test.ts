import { describe, expect, it } from "vitest";
import { ValidationError } from "../../errors.ts";
import { DEFAULT_RETENTION_PACE, MAX_REST_MS, restAfter, validateRetentionPace } from "./pacing.ts";

describe("the retention sweep's pace", () => {
  it("rests the ratio times each batch's time, so a slower batch (a busier database) gets a longer rest", () => {
    expect(restAfter(40, 4)).toBe(160);
    expect(restAfter(200, 4)).toBe(800);
    expect(restAfter(40, 0.5)).toBe(20);
  });

  it("rests at most MAX_REST_MS, and not at all under 1 ms or with a ratio of 0", () => {
    expect(restAfter(5_000, 4)).toBe(MAX_REST_MS);
    expect(restAfter(0.2, 4)).toBe(0);
    expect(restAfter(300, 0)).toBe(0);
  });

  it("accepts the default and the ends of each range", () => {
    expect(validateRetentionPace(DEFAULT_RETENTION_PACE)).toEqual(DEFAULT_RETENTION_PACE);
    expect(validateRetentionPace({ batchSize: 10, restRatio: 0 })).toEqual({ batchSize: 10, restRatio: 0 });
    expect(validateRetentionPace({ batchSize: 10_000, restRatio: 1000 })).toEqual({ batchSize: 10_000, restRatio: 1000 });
  });

  it("refuses a batch size or a rest ratio out of range with an error that names it", () => {
    for (const batchSize of [0, 9, 10_001, 100.5, Number.NaN]) {
      expect(() => validateRetentionPace({ batchSize, restRatio: 1 }), String(batchSize)).toThrow(/batch size must be a whole number from 10 to 10000/);
    }
    for (const restRatio of [-1, 1001, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => validateRetentionPace({ batchSize: 1000, restRatio }), String(restRatio)).toThrow(/rest ratio must be a number from 0/);
    }
    expect(() => validateRetentionPace({ batchSize: 0, restRatio: 1 })).toThrow(ValidationError);
  });
});
