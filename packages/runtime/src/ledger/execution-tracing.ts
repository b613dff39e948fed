import type { Context, Tracer } from "@opentelemetry/api";

/** An execution's tracing, when traces are on: its steps' and waits' spans are children of the attempt's. */
export interface ExecutionTracing {
  tracer: Tracer;
  /** The context holding the attempt's span. */
  context: Context;
  /** The attempt span's W3C traceparent: the parent of the runs this execution triggers. */
  traceparent: string | null;
}
