// The public SDK surface: what task authors and backends import from "@svc/runtime".
// Server-only code lives under "@svc/runtime/engine".
