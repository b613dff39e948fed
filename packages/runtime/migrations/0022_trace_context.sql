-- OpenTelemetry trace context (W3C traceparent), null unless tracing is configured.
-- traceparent: the span a run's attempts are children of (the trigger's HTTP span, or the parent run's attempt).
-- wait_traceparent: the span of the wait the run last suspended on; the resumed attempt links to it.
ALTER TABLE runs ADD COLUMN traceparent text, ADD COLUMN wait_traceparent text;
