// A finished run's result as Trigger.dev's TaskRunExecutionResult (GET /api/v1/runs/{id}/result,
// GET /api/v1/batches/{id}/results): the output as stored (text, or a packet path when
// `outputType` is application/store), or the error as Trigger.dev's TaskRunError.
import { z } from "zod";

/** Trigger.dev's internal error codes svc reports (a subset of the SDK's enum, which it validates). */
export const RUN_RESULT_ERROR_CODES = ["TASK_RUN_CANCELLED", "MAX_DURATION_EXCEEDED", "TASK_RUN_CRASHED", "UNSPECIFIED_ERROR"] as const;

export const RunResultError = z
  .discriminatedUnion("type", [
    z.object({
      type: z.literal("BUILT_IN_ERROR"),
      name: z.string(),
      message: z.string(),
      stackTrace: z.string().meta({ description: "The stack as thrown; empty when there was none" }),
    }),
    z.object({
      type: z.literal("INTERNAL_ERROR"),
      code: z.enum(RUN_RESULT_ERROR_CODES),
      message: z.string().optional(),
    }),
  ])
  .meta({ id: "RunResultError", description: "What ended a run that did not complete: an error its code threw (BUILT_IN_ERROR) or one of svc's (INTERNAL_ERROR)" });
export type RunResultError = z.output<typeof RunResultError>;

export const RunResult = z
  .discriminatedUnion("ok", [
    z.object({
      ok: z.literal(true),
      id: z.string(),
      taskIdentifier: z.string(),
      output: z.string().optional().meta({ description: "The output as stored: JSON or SuperJSON text, or a packet path (outputType application/store)" }),
      outputType: z.string(),
    }),
    z.object({ ok: z.literal(false), id: z.string(), taskIdentifier: z.string(), error: RunResultError }),
  ])
  .meta({ id: "RunResult", description: "A finished run's result: ok with its output (COMPLETED), or not ok with its error (any other final status)" });
export type RunResult = z.output<typeof RunResult>;

/** GET /api/v1/batches/{id}/results: the results of the batch's finished runs, in item order. */
export const BatchResultsResponse = z.object({ id: z.string(), items: z.array(RunResult) });
export type BatchResultsResponse = z.output<typeof BatchResultsResponse>;
