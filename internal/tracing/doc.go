// Package tracing sets up optional OpenTelemetry traces: when an OTLP
// endpoint is configured (OTEL_EXPORTER_OTLP_ENDPOINT), spans for HTTP
// requests (worker callbacks included) and for dispatches to workers are
// exported over OTLP/HTTP; the dispatch span's context travels to the
// worker in a traceparent header. With no endpoint nothing is started: a
// nil *Tracing passes everything through untouched.
package tracing
