import { SpanStatusCode, type Attributes, type Context, type Span, type Tracer } from "@opentelemetry/api";

/** An execution's tracing, when traces are on: its steps' and waits' spans are children of the attempt's. */
export interface ExecutionTracing {
  tracer: Tracer;
  /** The context holding the attempt's span. */
  context: Context;
  /** The attempt span's W3C traceparent: the parent of the runs this execution triggers. */
  traceparent: string | null;
}

/** Runs `fn` in a span under the attempt's: an error marks the span failed and goes on; the span ends either way. */
export async function inSpan<T>(tracing: ExecutionTracing, name: string, attributes: Attributes, fn: (span: Span) => Promise<T>): Promise<T> {
  const span = tracing.tracer.startSpan(name, { attributes }, tracing.context);
  try {
    return await fn(span);
  } catch (error) {
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
    throw error;
  } finally {
    span.end();
  }
}
