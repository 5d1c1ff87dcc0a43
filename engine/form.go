package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/tidwall/gjson"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// formPrinter prints the library's messages (in English, as its own
// errors are).
var formPrinter = message.NewPrinter(language.English)

// A UX node's data.form is a JSON Schema (draft 2020-12) for the answer a
// person gives (decision.answer). The compiler refuses a form that does not
// compile (CompileForm); a person's decision whose outcome completes the
// node is refused, with every problem, when its answer does not fit
// (checkForm).

// FormDraft is the only $schema a form may name (none means this one).
const FormDraft = "https://json-schema.org/draft/2020-12/schema"

// CodeFormInvalid is the problem code of each way an answer does not fit
// its node's form.
const CodeFormInvalid = "form_invalid"

// FormIssue is one thing wrong with a form or with an answer. Path locates
// it inside the form or the answer: "" for the whole, then ".key" (or
// `["key"]`) per object key and "[i]" per array index.
type FormIssue struct {
	Path    string
	Message string
}

// FormSchemaError is a form that does not compile: every issue found.
type FormSchemaError struct {
	Issues []FormIssue
}

func (e *FormSchemaError) Error() string {
	msgs := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		msgs[i] = is.Message
		if is.Path != "" {
			msgs[i] = "at form" + is.Path + ": " + is.Message
		}
	}
	return "invalid form: " + strings.Join(msgs, "; ")
}

// Form is a compiled form.
type Form struct {
	schema *jsonschema.Schema
	// work bounds each check of an answer (formbound.go).
	work *formWork
}

// formBase and formURL name a form while it compiles: a hierarchical URL
// (a relative $ref resolves against it) nothing can be loaded from (nor
// from any other URL: noLoader).
const (
	formBase = "stitchd:///"
	formURL  = formBase + "form.json"
)

// noLoader refuses every schema the form refers to by URL (a remote or
// relative $ref, a file: URL), so that a form never makes stitchd fetch or
// read anything. The draft's own meta-schemas are built into the library.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("stitchd does not load schemas from URLs (%s): put the definitions in the form's $defs and refer to them as \"#/$defs/…\"",
		strings.TrimPrefix(url, formBase))
}

// CompileForm compiles a form: a JSON object that is a draft 2020-12 JSON
// Schema. Formats (email, date, date-time, uri, uuid, …) are asserted;
// patterns are Go (RE2) regular expressions. A bad form is a
// *FormSchemaError listing every issue the library reports.
func CompileForm(raw json.RawMessage) (*Form, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, &FormSchemaError{Issues: []FormIssue{{Message: "form is not valid JSON: " + err.Error()}}}
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, &FormSchemaError{Issues: []FormIssue{{Message: "form must be a JSON Schema object ({\"type\": \"object\", \"properties\": …})"}}}
	}
	if s, ok := obj["$schema"]; ok && s != FormDraft && s != FormDraft+"#" {
		return nil, &FormSchemaError{Issues: []FormIssue{{Path: ".$schema",
			Message: fmt.Sprintf("form must be a draft 2020-12 JSON Schema: $schema must be %q or absent", FormDraft)}}}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	c.AssertFormat()
	work := &formWork{}
	c.RegisterVocabulary(work.vocabulary())
	c.AssertVocabs()
	if err := c.AddResource(formURL, doc); err != nil {
		return nil, fmt.Errorf("error adding a form: %w", err)
	}
	sch, err := c.Compile(formURL)
	if err != nil {
		return nil, &FormSchemaError{Issues: schemaIssues(err, doc)}
	}
	if n := expansion(sch, MaxFormExpansion); n > MaxFormExpansion {
		return nil, &FormSchemaError{Issues: []FormIssue{{Message: fmt.Sprintf("the schema has more than %d subschemas "+
			"once each $ref is written out in place (nested anyOf, oneOf or allOf referring to shared definitions "+
			"multiply them), too many to check an answer against: refer to fewer alternatives at each level", MaxFormExpansion)}}}
	}
	if recursionBranches(sch) {
		return nil, &FormSchemaError{Issues: []FormIssue{{Message: "the schema refers back to itself through more than one " +
			"alternative at the same level of the answer (a recursive $ref in two branches of an anyOf, oneOf or allOf): " +
			"checking an answer nested n levels deep would take 2^n steps; let each level refer back once"}}}
	}
	return &Form{schema: sch, work: work}, nil
}

// schemaIssues turns the library's compile error into issues: each way
// the form breaks the draft's meta-schema, or the one other error (a $ref
// to a URL, a bad pattern) with its message.
func schemaIssues(err error, doc any) []FormIssue {
	var se *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &se) && errors.As(se.Err, &ve) {
		return validationIssues(ve, doc)
	}
	msg := err.Error()
	var le *jsonschema.LoadURLError
	if errors.As(err, &le) {
		msg = le.Err.Error()
	}
	msg = strings.ReplaceAll(msg, formURL, "form")
	return []FormIssue{{Message: strings.ReplaceAll(msg, formBase, "")}}
}

// Check validates an answer (JSON; empty is null) against the form and
// returns every way it does not fit (none when it fits).
func (f *Form) Check(answer json.RawMessage) []FormIssue {
	if len(bytes.TrimSpace(answer)) == 0 {
		answer = json.RawMessage("null")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(answer))
	if err != nil {
		return []FormIssue{{Message: "the answer is not valid JSON: " + err.Error()}}
	}
	err = f.validate(v)
	if err == nil {
		return nil
	}
	if errors.Is(err, errFormWork) {
		return []FormIssue{{Message: err.Error()}}
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []FormIssue{{Message: err.Error()}}
	}
	return validationIssues(ve, v)
}

// Bounds on what a refused answer reports, whatever the form: the
// library's error tree can hold a node per subschema evaluated (up to
// MaxFormExpansion per part of the answer), and a message naming every
// alternative of nested anyOf grows with their product.
const (
	maxFormIssues       = 100    // issues reported
	maxFormAlternatives = 5      // alternatives of one anyOf/oneOf described
	maxIssueMessage     = 1000   // bytes of one issue's message
	maxIssueNodes       = 10_000 // error-tree nodes read
)

// validationIssues flattens a validation error's tree into its leaves,
// sorted by path: every problem (up to maxFormIssues), each where it is in
// the document doc. An anyOf or oneOf none of whose alternatives fits is
// one issue naming what each of its first maxFormAlternatives missed,
// since fixing any one of them is enough.
func validationIssues(ve *jsonschema.ValidationError, doc any) []FormIssue {
	budget := maxIssueNodes
	return boundedIssues(ve, doc, &budget)
}

// boundedIssues is validationIssues reading at most *budget nodes of the
// tree (shared with the alternatives' own issues).
func boundedIssues(ve *jsonschema.ValidationError, doc any, budget *int) []FormIssue {
	var out []FormIssue
	more := false
	add := func(is FormIssue) {
		if len(out) >= maxFormIssues {
			more = true
			return
		}
		is.Message = cutMessage(is.Message)
		out = append(out, is)
	}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if *budget <= 0 || len(out) >= maxFormIssues {
			more = true
			return
		}
		*budget--
		switch e.ErrorKind.(type) {
		case *kind.AnyOf, *kind.OneOf:
			if len(e.Causes) > 0 {
				at := docPath(doc, e.InstanceLocation)
				alts := make([]string, 0, min(len(e.Causes), maxFormAlternatives)+1)
				for i, c := range e.Causes[:min(len(e.Causes), maxFormAlternatives)] {
					var sub []string
					for _, is := range boundedIssues(c, doc, budget) {
						if rel := strings.TrimPrefix(is.Path, at); rel != "" {
							sub = append(sub, "at "+rel+": "+is.Message)
						} else {
							sub = append(sub, is.Message)
						}
					}
					alts = append(alts, "("+strconv.Itoa(i+1)+") "+cutMessage(strings.Join(sub, ", ")))
				}
				if n := len(e.Causes) - maxFormAlternatives; n > 0 {
					alts = append(alts, "and "+strconv.Itoa(n)+" more")
				}
				add(FormIssue{Path: at, Message: "fits none of the alternatives: " + strings.Join(alts, "; ")})
				return
			}
		}
		if len(e.Causes) == 0 {
			msg := strings.ReplaceAll(e.ErrorKind.LocalizedString(formPrinter), formURL, "form")
			add(FormIssue{Path: docPath(doc, e.InstanceLocation), Message: msg})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.SortStableFunc(out, func(a, b FormIssue) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	out = slices.Compact(out)
	if more {
		out = append(out, FormIssue{Message: "and more problems not listed"})
	}
	return out
}

// cutMessage cuts msg to maxIssueMessage bytes, on a character boundary.
func cutMessage(msg string) string {
	if len(msg) <= maxIssueMessage {
		return msg
	}
	cut := maxIssueMessage
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}

// docPath renders the JSON pointer tokens tokens into doc as a path:
// ".key" or `["key"]` per object key, "[i]" per array index.
func docPath(doc any, tokens []string) string {
	var b strings.Builder
	cur := doc
	for _, tok := range tokens {
		switch v := cur.(type) {
		case []any:
			b.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(v) {
				cur = v[i]
			} else {
				cur = nil
			}
		default:
			if plainKey(tok) {
				b.WriteString("." + tok)
			} else {
				q, _ := json.Marshal(tok)
				b.WriteString("[" + string(q) + "]")
			}
			m, _ := v.(map[string]any)
			cur = m[tok]
		}
	}
	return b.String()
}

// plainKey reports whether an object key may follow a dot in a path: an
// identifier, or a JSON Schema keyword ($defs, $ref).
func plainKey(s string) bool {
	s = strings.TrimPrefix(s, "$")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b == '_' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (i > 0 && b >= '0' && b <= '9') {
			continue
		}
		return false
	}
	return true
}

// FormError is an answer its node's form refuses: every problem, each
// with Path into the request ("$.output…", the answer being the request's
// output). It is an ErrInvalidRequest.
type FormError struct {
	Key      string
	Problems []Problem
}

func (e *FormError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the answer does not fit node %s's form: ", e.Key)
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Path + ": " + p.Message)
	}
	return b.String()
}

// Is makes a FormError an ErrInvalidRequest for errors.Is.
func (e *FormError) Is(target error) bool { return target == ErrInvalidRequest }

// formAnswerPath is where a decision's answer is in the request.
const formAnswerPath = "$.output"

// maxFormCache bounds the compiled forms a FormCache keeps (a handful
// are in use at once).
const maxFormCache = 256

// FormCache keeps compiled JSON Schemas by their JSON, so a form is
// compiled once, not at each answer (nil for one that does not compile).
// The zero value is ready; it is safe for concurrent use.
type FormCache struct {
	// Now, when set, is the clock a check's time limit (MaxFormTime) is
	// read from.
	Now func() time.Time

	mu sync.Mutex
	m  map[string]*Form
}

// Get returns raw compiled (nil, with the error, when it does not
// compile).
func (c *FormCache) Get(raw json.RawMessage) (*Form, error) {
	c.mu.Lock()
	f, ok := c.m[string(raw)]
	c.mu.Unlock()
	if ok {
		if f == nil {
			return nil, &FormSchemaError{Issues: []FormIssue{{Message: "form does not compile"}}}
		}
		return f, nil
	}
	f, err := CompileForm(raw)
	if f != nil {
		f.work.now = c.Now
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxFormCache {
		c.m = map[string]*Form{}
	}
	c.m[string(raw)] = f
	c.mu.Unlock()
	return f, err
}

// nodeForm returns node n's compiled form (nil when it has none). A form
// that does not compile — only in a version saved before forms were
// checked — is not enforced.
func (c *FormCache) nodeForm(n *Node) *Form {
	raw := FormOf(n.Config)
	if raw == nil {
		return nil
	}
	f, _ := c.Get(raw)
	return f
}

// FormOf returns a UX node's data.form as saved (nil when absent or
// null): for checkForm, and for the approvals inbox to render.
func FormOf(config json.RawMessage) json.RawMessage {
	var cfg struct {
		Form json.RawMessage `json:"form"`
	}
	if len(config) == 0 || json.Unmarshal(config, &cfg) != nil || len(cfg.Form) == 0 || string(cfg.Form) == "null" {
		return nil
	}
	return cfg.Form
}

// FormOutcomes returns the outcomes a UX node's form applies to
// (data.formOutcomes; default: every outcome but reject).
func FormOutcomes(n *Node) []string {
	var cfg struct {
		FormOutcomes []string `json:"formOutcomes"`
	}
	if len(n.Config) > 0 && json.Unmarshal(n.Config, &cfg) == nil && cfg.FormOutcomes != nil {
		return cfg.FormOutcomes
	}
	var out []string
	for _, o := range UXOutcomes(n) {
		if o != "reject" {
			out = append(out, o)
		}
	}
	return out
}

// checkForm refuses, before anything changes, a person's decision p at UX
// node n (instance key) whose answer does not fit the node's form. It is
// called for an outcome that completes the node, whose output then
// carries the answer; a failing outcome keeps no answer, and a deadline's
// onTimeout outcome has none (nobody answered), so neither is checked.
//
// The form applies only to the outcomes it is for (FormOutcomes): another
// outcome (reject, escalate) needs no form filled in, and its answer is
// kept as given.
func checkForm(forms *FormCache, n *Node, key, outcome string, p CompleteUXParams) error {
	if p.timedOut || !slices.Contains(FormOutcomes(n), outcome) {
		return nil
	}
	f := forms.nodeForm(n)
	if f == nil {
		return nil
	}
	issues := f.Check(p.Output)
	if len(issues) == 0 {
		return nil
	}
	ps := make([]Problem, len(issues))
	for i, is := range issues {
		ps[i] = Problem{Code: CodeFormInvalid, NodeID: n.ID, Path: formAnswerPath + is.Path, Message: is.Message}
	}
	return &FormError{Key: key, Problems: ps}
}

// decisionComment is the comment of a person's answer p at UX node n:
// the one given beside the answer, else — when n's form defines a
// "comment" field, which replaces the built-in comment box — the answer's
// comment (docs/approvals.md, One comment). decision.comment always holds
// it.
func decisionComment(n *Node, p CompleteUXParams) string {
	if strings.TrimSpace(p.Comment) != "" || len(p.Output) == 0 || !FormHasComment(n.Config) {
		return p.Comment
	}
	if c := gjson.GetBytes(p.Output, "comment"); c.Type == gjson.String {
		return strings.TrimSpace(c.Str)
	}
	return p.Comment
}

// FormHasComment reports whether a UX node's form (data.form) defines a
// top-level "comment" property: its field is the decision's comment.
func FormHasComment(config json.RawMessage) bool {
	f := FormOf(config)
	return f != nil && gjson.GetBytes(f, "properties.comment").Exists()
}
