package tracing

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/httpstatus"
)

// Tracing exports spans to an OTLP collector. A nil *Tracing is valid and
// does nothing.
type Tracing struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

// Options configures Setup.
type Options struct {
	// Endpoint is the OTLP base URL (OTEL_EXPORTER_OTLP_ENDPOINT, e.g.
	// http://collector:4318); spans go to <Endpoint>/v1/traces. Empty =
	// no tracing.
	Endpoint string
	// Version is stitchd's version (service.version).
	Version string
}

// Setup starts the exporter, or returns nil when no endpoint is set. The
// exporter's other settings (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, …) and
// OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES are read from the
// environment by the OpenTelemetry SDK as usual.
func Setup(ctx context.Context, o Options) (*Tracing, error) {
	if o.Endpoint == "" {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(strings.TrimRight(o.Endpoint, "/")+"/v1/traces"))
	if err != nil {
		return nil, fmt.Errorf("error setting up the OTLP trace exporter for %s: %w", o.Endpoint, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "stitchd"), attribute.String("service.version", o.Version)),
		resource.WithFromEnv(), resource.WithHost())
	if err != nil {
		return nil, fmt.Errorf("error describing the trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{tp: tp, tracer: tp.Tracer("github.com/stitchd/stitchd"),
		prop: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}, nil
}

// Shutdown flushes and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Middleware wraps an HTTP handler with a server span per request, named
// after the route with its parameters elided (a callback's token never
// appears in a span).
func (t *Tracing) Middleware(next http.Handler) http.Handler {
	if t == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		route := Route(r.URL.Path)
		ctx, span := t.tracer.Start(ctx, r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", route)))
		defer span.End()
		sw := httpstatus.Wrap(w)
		next.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.Code))
		if sw.Code >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.Code))
		}
	})
}

// Transport wraps the dispatcher's transport with a client span per
// delivery and passes the trace on to the worker (traceparent).
func (t *Tracing) Transport(rt http.RoundTripper) http.RoundTripper {
	if t == nil {
		return rt
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		ctx, span := t.tracer.Start(r.Context(), "dispatch", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.String("http.request.method", r.Method),
				attribute.String("server.address", r.URL.Hostname()),
				attribute.String("stitchd.dispatch_id", r.Header.Get("webhook-id"))))
		defer span.End()
		r = r.Clone(ctx)
		t.prop.Inject(ctx, propagation.HeaderCarrier(r.Header))
		resp, err := rt.RoundTrip(r)
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			return nil, err
		}
		span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			span.SetStatus(codes.Error, "worker answered "+strconv.Itoa(resp.StatusCode))
		}
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// params names the path segment that follows each of these segments.
var params = map[string]string{"callbacks": "{token}", "hooks": "{slug}", "nodes": "{key}", "versions": "{number}"}

// Route turns a request path into a low-cardinality route: ids, tokens,
// slugs and node keys become placeholders; paths outside the API (the web
// UI) become /*.
func Route(path string) string {
	switch {
	case path == "/healthz", path == "/readyz", path == "/metrics":
		return path
	case !strings.HasPrefix(path, "/api/") && !strings.HasPrefix(path, "/callbacks/") && !strings.HasPrefix(path, "/hooks/"):
		return "/*"
	}
	segs := strings.Split(path, "/")
	for i := 1; i < len(segs); i++ {
		if p, ok := params[segs[i-1]]; ok && segs[i] != "" {
			segs[i] = p
		} else if uuidPattern.MatchString(segs[i]) {
			segs[i] = "{id}"
		}
	}
	return strings.Join(segs, "/")
}

// maxLinks bounds the links of a transaction's span (OpenTelemetry's
// default limit too).
const maxLinks = 128

// StartTransaction starts a span for one transaction of the engine's
// commit service (engine.Tracer): a child of the request whose operation
// the transaction serves first, linked to the other requests it serves.
func (t *Tracing) StartTransaction(ctx context.Context, p engine.TransactionTrace) (context.Context, func(error)) {
	links := make([]trace.Link, 0, min(len(p.Others), maxLinks))
	seen := map[trace.SpanID]bool{trace.SpanContextFromContext(ctx).SpanID(): true}
	for _, o := range p.Others {
		if len(links) == maxLinks {
			break
		}
		sc := trace.SpanContextFromContext(o)
		if !sc.IsValid() || seen[sc.SpanID()] {
			continue
		}
		seen[sc.SpanID()] = true
		links = append(links, trace.Link{SpanContext: sc})
	}
	//nolint:spancheck // ended by the func returned, once the transaction ended
	ctx, span := t.tracer.Start(ctx, "engine.transaction", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithLinks(links...),
		trace.WithAttributes(attribute.Int("stitchd.runs", p.Runs), attribute.Int("stitchd.operations", p.Operations)))
	return ctx, func(err error) { //nolint:spancheck // as above
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}
