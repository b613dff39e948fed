import { SpanKind, SpanStatusCode, type Link, type Span, type Tracer } from "@opentelemetry/api";
import { contextOf, spanContextOf } from "@svc/runtime/engine";
import type { Claim } from "./claim.ts";
import type { Via } from "./via.ts";

/**
 * The span of one attempt (`attempt <task>`): a child of the span the run was triggered under (its
 * `traceparent`: the trigger's HTTP span, or the parent run's attempt), and — when it resumes the
 * run — linked to the span of the wait it resumes from.
 */
export function startAttemptSpan(tracer: Tracer, { run, previousStatus }: Claim, via: Via): Span {
  const resumed = previousStatus === "WAITING";
  const wait = resumed ? spanContextOf(run.wait_traceparent) : null;
  const links: Link[] = wait ? [{ context: wait, attributes: { "svc.link": "resumed from wait" } }] : [];
  return tracer.startSpan(
    `attempt ${run.task_identifier}`,
    {
      kind: SpanKind.CONSUMER,
      links,
      attributes: {
        "svc.run.id": run.id,
        "svc.task.id": run.task_identifier,
        "svc.run.attempt": run.attempt_number,
        "svc.run.resumed": resumed,
        "svc.run.via": via,
        "svc.queue.name": run.queue_name,
      },
    },
    contextOf(run.traceparent),
  );
}

/** Ends an attempt's span with how the attempt ended (`svc.attempt.outcome`). */
export function endAttemptSpan(span: Span, outcome: { kind: string; error?: unknown }): void {
  span.setAttribute("svc.attempt.outcome", outcome.kind);
  if (outcome.kind === "threw" || outcome.kind === "timed_out" || outcome.kind === "errored") {
    const error = outcome.error;
    if (error !== undefined) span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : outcome.kind });
  }
  span.end();
}
