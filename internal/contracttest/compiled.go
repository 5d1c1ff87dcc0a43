package contracttest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// kin-openapi validates a value against an OpenAPI 3.1 schema (VisitJSON
// with EnableJSONSchema2020) by turning the schema into a JSON Schema
// document and compiling it, on every call: for a run answered whole,
// most of the check's time; with a reference and no 2020-12 keyword, it
// then throws the document away and uses its own validator. validators
// keeps, per schema of the contract, what kin-openapi would use, the
// document compiled once, so that a body that fits is known to fit
// without kin-openapi. A body found not to fit, and a schema for which
// neither applies, go through kin-openapi as before: every refusal and
// its message are kin-openapi's.
//
// The document is built as kin-openapi v0.153.0 builds it
// (newJSONSchemaValidator): the schema marshalled, each
// #/components/schemas/ reference it holds copied into $defs, every
// format it names registered and asserted, draft 2020-12.

// validator is how kin-openapi validates values against one schema.
type validator struct {
	schema *openapi3.Schema
	// compiled is the document kin-openapi compiles for the schema; nil
	// when it uses its own validator instead (legacy) or the document
	// does not compile (neither: kin-openapi decides).
	compiled *jsonschema.Schema
	// legacy: kin-openapi validates with its own validator (a schema with
	// a reference and no 2020-12 keyword).
	legacy bool
}

// fits says value fits the schema; false also when only kin-openapi can
// say (neither compiled nor legacy).
func (v *validator) fits(value any, asResponse bool) bool {
	switch {
	case v.compiled != nil:
		return v.compiled.Validate(value) == nil
	case v.legacy:
		// What kin-openapi passes but EnableJSONSchema2020, which only
		// leads it to the compiled document and ignores nullable (no
		// schema of the contract has it: see newValidator).
		as := openapi3.VisitAsRequest()
		if asResponse {
			as = openapi3.VisitAsResponse()
		}
		return v.schema.VisitJSON(value, openapi3.MultiErrors(), as) == nil
	}
	return false
}

// validatorOf is schema's validator, made once.
func validatorOf(doc *openapi3.T, schema *openapi3.Schema) *validator {
	if v, ok := validators.get(schema); ok {
		return v
	}
	v := newValidator(doc, schema)
	validators.put(schema, v)
	return v
}

var validators memo[*openapi3.Schema, *validator]

// memo remembers at most maxVerdicts results of a function without side
// effects, safe for concurrent use.
type memo[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

const maxVerdicts = 1 << 16

func (c *memo[K, V]) get(k K) (V, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *memo[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[K]V{}
	}
	if len(c.m) < maxVerdicts {
		c.m[k] = v
	}
}

func newValidator(doc *openapi3.T, schema *openapi3.Schema) *validator {
	v := &validator{schema: schema}
	c, err := compile(doc, schema)
	switch {
	case err == nil:
		v.compiled = c
	case errors.Is(err, errFallsBack):
		v.legacy = !nullable(schema)
	}
	return v
}

// nullable says whether schema or one it holds says nullable (OpenAPI
// 3.0), which kin-openapi's own validator reads differently without
// EnableJSONSchema2020.
func nullable(schema *openapi3.Schema) bool {
	errNullable := errors.New("nullable")
	err := openapi3.NewSchemaRef("", schema).WalkSubtree(func(_ string, ref *openapi3.SchemaRef) error {
		if ref.Value.Nullable {
			return errNullable
		}
		return nil
	})
	return err != nil
}

const schemasPrefix = "#/components/schemas/"

var errFallsBack = errors.New("kin-openapi validates this schema with its own validator")

func compile(doc *openapi3.T, schema *openapi3.Schema) (*jsonschema.Schema, error) {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("error marshalling a schema: %w", err)
	}
	var root any
	if err := json.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("error reading a marshalled schema: %w", err)
	}
	refs := map[string]string{} // reference → its id in $defs
	defs := map[string]any{}
	pending := []any{root}
	for len(pending) > 0 {
		node := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		switch node := node.(type) {
		case map[string]any:
			if ref, ok := node["$ref"].(string); ok && strings.HasPrefix(ref, schemasPrefix) {
				id, ok := refs[ref]
				if !ok {
					target, err := component(doc, ref)
					if err != nil {
						return nil, err
					}
					id = fmt.Sprintf("ref%d", len(refs))
					refs[ref], defs[id] = id, target
					pending = append(pending, target)
				}
				node["$ref"] = "#/$defs/" + id
			}
			for _, v := range node {
				pending = append(pending, v)
			}
		case []any:
			pending = append(pending, node...)
		}
	}
	// With a reference and no 2020-12 keyword, kin-openapi uses its
	// own validator, not the compiled one.
	if len(refs) > 0 && !uses2020(schema) {
		return nil, errFallsBack
	}
	m, ok := root.(map[string]any)
	if !ok {
		return nil, errors.New("a schema that is not an object")
	}
	if len(defs) > 0 {
		m["$defs"] = defs
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	formats := map[string]bool{}
	collectFormats(m, formats)
	for f := range formats {
		c.RegisterFormat(&jsonschema.Format{Name: f, Validate: formatValidator(f)})
	}
	if len(formats) > 0 {
		c.AssertFormat()
	}
	const url = "https://example.com/schema.json"
	if err := c.AddResource(url, m); err != nil {
		return nil, fmt.Errorf("error adding a schema: %w", err)
	}
	return c.Compile(url)
}

// component is the schema ref names (#/components/schemas/<name>), as
// JSON.
func component(doc *openapi3.T, ref string) (any, error) {
	name := strings.TrimPrefix(ref, schemasPrefix)
	sr := doc.Components.Schemas[name]
	if strings.Contains(name, "/") || sr == nil || sr.Value == nil {
		return nil, fmt.Errorf("no schema %s", ref)
	}
	b, err := json.Marshal(sr.Value)
	if err != nil {
		return nil, fmt.Errorf("error marshalling %s: %w", ref, err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("error reading %s: %w", ref, err)
	}
	return v, nil
}

var errUses2020 = errors.New("a JSON Schema 2020-12 keyword")

// uses2020 says whether schema, with what it references, uses one of the
// keywords that keep kin-openapi on the compiled document
// (schemaUsesJSONSchema2020Features).
func uses2020(schema *openapi3.Schema) bool {
	err := openapi3.NewSchemaRef("", schema).WalkSubtree(func(_ string, ref *openapi3.SchemaRef) error {
		s := ref.Value
		if s.Const != nil || len(s.PrefixItems) != 0 || s.Contains != nil || len(s.PatternProperties) != 0 ||
			len(s.DependentSchemas) != 0 || s.PropertyNames != nil ||
			s.UnevaluatedItems.Has != nil || s.UnevaluatedItems.Schema != nil ||
			s.UnevaluatedProperties.Has != nil || s.UnevaluatedProperties.Schema != nil ||
			s.If != nil || s.Then != nil || s.Else != nil ||
			len(s.DependentRequired) != 0 || len(s.Defs) != 0 || s.ContentSchema != nil {
			return errUses2020
		}
		return nil
	})
	return errors.Is(err, errUses2020)
}

func collectFormats(node any, formats map[string]bool) {
	switch node := node.(type) {
	case map[string]any:
		if f, ok := node["format"].(string); ok && f != "" {
			formats[f] = true
		}
		for _, v := range node {
			collectFormats(v, formats)
		}
	case []any:
		for _, v := range node {
			collectFormats(v, formats)
		}
	}
}

// formatValidator checks a format as kin-openapi does: with the
// validators openapi3 defines (date-time, int32, …), a format it does not
// define passing.
func formatValidator(format string) func(any) error {
	return func(value any) error {
		switch v := value.(type) {
		case string:
			if f, ok := openapi3.SchemaStringFormats[format]; ok {
				return f.Validate(v)
			}
		case json.Number:
			if n, err := v.Float64(); err == nil {
				return numberFormat(format, n)
			}
		case float64:
			return numberFormat(format, v)
		case float32:
			return numberFormat(format, float64(v))
		case int:
			return numberFormat(format, float64(v))
		case int32:
			return numberFormat(format, float64(v))
		case int64:
			return numberFormat(format, float64(v))
		}
		return nil
	}
}

func numberFormat(format string, v float64) error {
	if v == math.Trunc(v) && !math.IsInf(v, 0) {
		if f, ok := openapi3.SchemaIntegerFormats[format]; ok {
			return f.Validate(int64(v))
		}
	}
	if f, ok := openapi3.SchemaNumberFormats[format]; ok {
		return f.Validate(v)
	}
	return nil
}

// fits says ex fits the contract as kin-openapi would find, each body
// checked by its schema's validator; false when it does not, or when
// only kin-openapi can say: Problems then checks ex with kin-openapi
// alone. rq is ex's request, cloned, route and params where the router
// put it.
func fits(ctx context.Context, ex Exchange, rq *http.Request, route *routers.Route, params map[string]string) bool {
	opts := &openapi3filter.Options{
		MultiError: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
		SkipSettingDefaults: true, IncludeResponseStatus: true,
		ExcludeRequestBody: true, ExcludeResponseBody: true,
	}
	reqIn := &openapi3filter.RequestValidationInput{Request: rq, PathParams: params, Route: route, Options: opts}
	if !deliberate(ex.Request) && (ex.Status < 400 || ex.Status >= 500) {
		if !paramsFit(ctx, reqIn) || !requestBodyFits(route, rq.Header, ex.RequestBody) {
			return false
		}
	}
	in := &openapi3filter.ResponseValidationInput{RequestValidationInput: reqIn, Status: ex.Status, Header: ex.Header,
		Body: io.NopCloser(bytes.NewReader(ex.Body)), Options: opts}
	if openapi3filter.ValidateResponse(ctx, in) != nil {
		return false
	}
	ct := ex.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	if ex.Partial || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		// Problems checks the content type alone, of a status listed.
		resp := route.Operation.Responses.Status(ex.Status)
		return resp == nil || resp.Value == nil || len(resp.Value.Content) == 0 || resp.Value.Content.Get(ct) != nil
	}
	// What ValidateResponse checks of a body.
	switch ex.Status {
	case http.StatusNotModified, http.StatusPermanentRedirect, http.StatusTemporaryRedirect, http.StatusMovedPermanently:
		return true
	}
	resp := route.Operation.Responses.Status(ex.Status)
	if resp == nil {
		resp = route.Operation.Responses.Default()
	}
	if resp == nil || resp.Value == nil {
		return false
	}
	if len(resp.Value.Content) == 0 {
		return true
	}
	media := resp.Value.Content.Get(ct)
	return media != nil && bodyFits(route.Spec, ct, media, ex.Body, true)
}

// paramsFit is ValidateRequest's verdict on in's security and
// parameters (its body apart), a parameter's remembered for the values it
// is given (see paramFits).
func paramsFit(ctx context.Context, in *openapi3filter.RequestValidationInput) bool {
	op := in.Route.Operation
	security := op.Security
	if security == nil {
		security = &in.Route.Spec.Security
	}
	if openapi3filter.ValidateSecurityRequirements(ctx, in, *security) != nil {
		return false
	}
	for _, pr := range in.Route.PathItem.Parameters {
		p := pr.Value
		if op.Parameters != nil && op.Parameters.GetByInAndName(p.In, p.Name) != nil {
			continue
		}
		if !paramFits(ctx, in, p) {
			return false
		}
	}
	for _, pr := range op.Parameters {
		if !paramFits(ctx, in, pr.Value) {
			return false
		}
	}
	return true
}

// paramFits is ValidateParameter's verdict. For a parameter of one
// primitive type in the path, query or a header, the verdict depends on
// nothing but the values given under its name (kin-openapi compiles its
// schema for each check), so it is remembered, up to maxVerdicts.
func paramFits(ctx context.Context, in *openapi3filter.RequestValidationInput, p *openapi3.Parameter) bool {
	key, ok := paramKey(in, p)
	if !ok {
		return openapi3filter.ValidateParameter(ctx, in, p) == nil
	}
	if fits, ok := paramVerdicts.get(key); ok {
		return fits
	}
	fits := openapi3filter.ValidateParameter(ctx, in, p) == nil
	paramVerdicts.put(key, fits)
	return fits
}

var paramVerdicts memo[verdictKey, bool]

type verdictKey struct {
	p *openapi3.Parameter
	// values are what the request gives under the parameter's name, none
	// its path or query having no parameter at all.
	values string
	given  bool
	none   bool
}

func paramKey(in *openapi3filter.RequestValidationInput, p *openapi3.Parameter) (verdictKey, bool) {
	if p.Content != nil || p.Schema == nil || p.Schema.Value == nil {
		return verdictKey{}, false
	}
	s := p.Schema.Value
	if s.Type == nil || len(*s.Type) != 1 || len(s.OneOf) != 0 || len(s.AnyOf) != 0 || len(s.AllOf) != 0 || s.Not != nil {
		return verdictKey{}, false
	}
	switch (*s.Type)[0] {
	case openapi3.TypeString, openapi3.TypeInteger, openapi3.TypeNumber, openapi3.TypeBoolean:
	default:
		return verdictKey{}, false
	}
	k := verdictKey{p: p}
	var values []string
	switch p.In {
	case openapi3.ParameterInPath:
		k.none = len(in.PathParams) == 0
		var v string
		v, k.given = in.PathParams[p.Name]
		values = []string{v}
	case openapi3.ParameterInQuery:
		q := in.GetQueryParams()
		k.none = len(q) == 0
		values, k.given = q[p.Name]
	case openapi3.ParameterInHeader:
		values, k.given = in.Request.Header[http.CanonicalHeaderKey(p.Name)]
	default:
		return verdictKey{}, false
	}
	k.values = fmt.Sprintf("%q", values)
	return k, true
}

// requestBodyFits is ValidateRequestBody's verdict, compiled schemas
// checking the body.
func requestBodyFits(route *routers.Route, h http.Header, body []byte) bool {
	rb := route.Operation.RequestBody
	if rb == nil {
		return true
	}
	if rb.Value == nil {
		return false
	}
	if len(body) == 0 {
		return !rb.Value.Required
	}
	if len(rb.Value.Content) == 0 {
		return true
	}
	ct := h.Get("Content-Type")
	media := rb.Value.Content.Get(ct)
	return media != nil && bodyFits(route.Spec, ct, media, body, false)
}

// bodyFits says body, of content type ct, fits media's schema; false
// also when that takes kin-openapi (a body other than JSON, a schema
// without a compiled form).
func bodyFits(doc *openapi3.T, ct string, media *openapi3.MediaType, body []byte, asResponse bool) bool {
	if media.Schema == nil {
		return true
	}
	mt, _, _ := strings.Cut(ct, ";")
	if !strings.EqualFold(strings.TrimSpace(mt), "application/json") || media.Schema.Value == nil {
		return false
	}
	val := validatorOf(doc, media.Schema.Value)
	if val.compiled == nil && !val.legacy {
		return false
	}
	// A test polling a resource is given the same answer many times.
	key := bodyKey{v: val, asResponse: asResponse, sum: sha256.Sum256(body)}
	if _, ok := bodiesFitting.get(key); ok {
		return true
	}
	// As kin-openapi decodes a JSON body.
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || !val.fits(v, asResponse) {
		return false
	}
	bodiesFitting.put(key, true)
	return true
}

// bodyKey is a body (its SHA-256) checked by a validator.
type bodyKey struct {
	v          *validator
	asResponse bool
	sum        [sha256.Size]byte
}

var bodiesFitting memo[bodyKey, bool] // the bodies found fitting
