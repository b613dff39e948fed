import type { Tracer } from "@opentelemetry/api";

/** The tracer of a process that exports traces, and what flushes and stops the export. */
export interface Tracing {
  tracer: Tracer;
  /** Exports the spans still buffered, then stops. */
  shutdown(): Promise<void>;
}

/**
 * Starts exporting OTLP/HTTP traces when `env.OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; null otherwise, and then nothing of the SDK is
 * even loaded (the callers skip every span: tracing off costs a null check).
 *
 * Called once, at a process's entry (serve.ts), which passes the tracer where spans are made. The
 * provider is not registered as the @opentelemetry/api global: svc's spans get their parents
 * explicitly (from the request's `traceparent`, from the run row), so no context manager
 * (AsyncLocalStorage) is needed, and task code's own OpenTelemetry setup is left alone.
 */
export async function startTracing(env: NodeJS.ProcessEnv, serviceName: string): Promise<Tracing | null> {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || (env.OTEL_EXPORTER_OTLP_ENDPOINT ? `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, "")}/v1/traces` : "");
  if (!endpoint || env.OTEL_SDK_DISABLED === "true") return null;
  const [{ TracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import("@opentelemetry/sdk-trace"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
  ]);
  const number = (name: string) => {
    const value = Number(env[name]);
    return env[name] && Number.isFinite(value) && value >= 0 ? value : undefined;
  };
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": env.OTEL_SERVICE_NAME || serviceName }),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url: endpoint }),
        scheduledDelayMillis: number("OTEL_BSP_SCHEDULE_DELAY"),
        maxQueueSize: number("OTEL_BSP_MAX_QUEUE_SIZE"),
        maxExportBatchSize: number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
        exportTimeoutMillis: number("OTEL_BSP_EXPORT_TIMEOUT"),
      }),
    ],
  });
  return { tracer: provider.getTracer("svc"), shutdown: () => provider.shutdown() };
}
