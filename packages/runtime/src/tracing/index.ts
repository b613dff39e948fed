export { startTracing, type Tracing } from "./start-tracing.ts";
export { contextOf, spanContextOf, traceparentOf } from "./traceparent.ts";
