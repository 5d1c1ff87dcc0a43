package compiler

import (
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/stitchd/stitchd/engine"
	"github.com/tidwall/gjson"
)

// maxTimeoutSeconds is the largest timeout that fits a time.Duration.
const maxTimeoutSeconds = float64(math.MaxInt64 / 1e9)

// Retry limits.
const (
	minMaxAttempts = 1
	maxMaxAttempts = 100
)

// Retry policy limits.
const (
	maxMultiplier   = 100
	maxNonRetryable = 100
)

// maxMaxConcurrency bounds a Splitter's maxConcurrency.
const maxMaxConcurrency = 100_000

var backoffKinds = []string{"exponential", "fixed", "linear"}

// maxRateLimit bounds a worker node's rateLimit (deliveries a second).
const maxRateLimit = 100000

var jitterWords = []string{"full", "none"}

var completeAsValues = []string{"success", "failure", "neutral"}

// present reports whether an optional field is set (JSON null counts as
// absent).
func present(r gjson.Result) bool { return r.Exists() && r.Type != gjson.Null }

// ownRules reports whether typ's data is checked by the compiler's own
// rules (validateNodeConfig) rather than by its spec's schema and Check:
// the ten first built-in types, whose rules need the flow around the node
// (its fields, forms, people, sub-flows). Every other type — built-in or
// added — is checked by its spec.
func ownRules(typ engine.NodeType) bool {
	switch typ {
	case engine.NodeTypeWorker, engine.NodeTypeUX, engine.NodeTypeSplitter, engine.NodeTypeCollector,
		engine.NodeTypeCondition, engine.NodeTypeTransform, engine.NodeTypeWait, engine.NodeTypeHTTP,
		engine.NodeTypeEvent, engine.NodeTypeSubFlow:
		return true
	}
	return false
}

// validateNodeConfig checks the canonical data of node vi of a known type.
// cfg is a canonical JSON object, so every key occurs once and gjson sees
// the same value as encoding/json would.
func (c *compiler) validateNodeConfig(vi int, id string, typ engine.NodeType, cfg []byte) {
	base := nodeLoc(vi).field("data")
	root := gjson.ParseBytes(cfg)
	c.checkUnknownKeys(id, base, root)
	switch typ {
	case engine.NodeTypeWorker:
		c.checkWorkerTarget(id, base, root)
		if r := root.Get("rateLimit"); present(r) && (r.Type != gjson.Number || !(r.Num > 0) || r.Num > maxRateLimit) {
			c.errAt(CodeInvalidConfig, id, "", base.field("rateLimit"), "worker %q: rateLimit must be a number of deliveries a second above 0 (at most %d), got %s", id, maxRateLimit, r.Raw)
		}
		c.checkTimeout(id, base, root.Get("timeoutSeconds"))
		c.checkRetry(id, base.field("retry"), root.Get("retry"))
		c.checkDelivery(id, base.field("delivery"), root.Get("delivery"))
		if r := root.Get("cancelUrl"); present(r) {
			if u, err := url.Parse(r.Str); r.Type != gjson.String || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
				c.errAt(CodeInvalidConfig, id, "", base.field("cancelUrl"), "worker %q: cancelUrl must be an absolute http or https URL with a host, got %s", id, r.Raw)
			}
		}
		c.checkEntityMovement(id, base.field("entityMovement"), root.Get("entityMovement"))
	case engine.NodeTypeUX:
		c.checkEntityMovement(id, base.field("entityMovement"), root.Get("entityMovement"))
		c.checkOutcomes(id, base.field("outcomes"), root.Get("outcomes"))
		c.checkTimeout(id, base, root.Get("timeoutSeconds"))
		c.checkOnTimeout(id, base, root)
		c.checkForm(id, base.field("form"), root.Get("form"))
		c.checkFormOutcomes(id, base.field("formOutcomes"), root)
		c.checkSummary(id, base.field("summary"), root.Get("summary"))
		c.checkPeople(id, base, root)
		c.checkEscalation(id, base.field("escalation"), root.Get("escalation"))
		if r := root.Get("remindAfterSeconds"); present(r) && (r.Type != gjson.Number || !(r.Num >= 1) || r.Num > maxTimeoutSeconds) {
			c.errAt(CodeInvalidConfig, id, "", base.field("remindAfterSeconds"), "node %q: remindAfterSeconds must be a number of seconds, at least 1 (at most %.0f), got %s", id, maxTimeoutSeconds, r.Raw)
		}
	case engine.NodeTypeCondition:
		c.checkEntityMovement(id, base.field("entityMovement"), root.Get("entityMovement"))
	case engine.NodeTypeWait:
		c.checkWait(id, base, root)
		c.checkEntityMovement(id, base.field("entityMovement"), root.Get("entityMovement"))
	case engine.NodeTypeHTTP:
		c.checkHTTP(id, base, root)
	case engine.NodeTypeEvent:
		c.checkEvent(id, base, root)
		c.checkEntityMovement(id, base.field("entityMovement"), root.Get("entityMovement"))
	case engine.NodeTypeSubFlow:
		c.checkSubFlow(id, base, root)
		c.checkEntityMovement(id, base.field("entityMovement"), root.Get("entityMovement"))
	case engine.NodeTypeTransform:
		c.checkExpression(id, base.field("expression"), root.Get("expression"))
		c.checkEntityMovement(id, base.field("entityMovement"), root.Get("entityMovement"))
	case engine.NodeTypeSplitter:
		if ap := root.Get("arrayPath"); ap.Type != gjson.String || strings.TrimSpace(ap.Str) == "" {
			c.errAt(CodeMissingArrayPath, id, "", base.field("arrayPath"), "splitter %q needs a non-empty string arrayPath (a gjson path to the array to split)", id)
		}
		c.rejectEntityMovement(id, base, root)
		if m := root.Get("maxConcurrency"); present(m) {
			if n, ok := integer(m); !ok || n < 1 || n > maxMaxConcurrency {
				c.errAt(CodeInvalidConfig, id, "", base.field("maxConcurrency"), "splitter %q: maxConcurrency must be an integer from 1 to %d, got %s", id, maxMaxConcurrency, m.Raw)
			}
		}
	case engine.NodeTypeCollector:
		c.rejectEntityMovement(id, base, root)
		if tf := root.Get("toleratedFailures"); present(tf) {
			if _, err := engine.ParseTolerance(tf); err != nil {
				c.errAt(CodeInvalidConfig, id, "", base.field("toleratedFailures"), "collector %q: toleratedFailures %s", id, err)
			}
		}
	}
}

// checkAddedType checks the data of node vi of a type the compiler has no
// rules of its own for (ownRules) against the type's config schema and
// with its Check, and its entity movement as any step's.
func (c *compiler) checkAddedType(vi int, id string, spec *engine.NodeTypeSpec, cfg []byte) {
	base := nodeLoc(vi).field("data")
	if len(spec.ConfigSchema) > 0 {
		schema, err := c.typeSchema(spec)
		if err != nil {
			c.errAt(CodeInvalidConfig, id, "", base, "%s %q: the type's config schema does not compile: %v", spec.Type, id, err)
			return
		}
		// A built-in's retry policy (the Worker's: an Email's) is checked
		// by the compiler's own rules, whose words a person reads better,
		// and once; an added type's "retry" is its own, and its schema's.
		retries := spec.Builtin && gjson.GetBytes(spec.ConfigSchema, "properties.retry").Exists()
		for _, is := range schema.Check(cfg) {
			if retries && (is.Path == ".retry" || strings.HasPrefix(is.Path, ".retry.") || strings.HasPrefix(is.Path, ".retry[")) {
				continue
			}
			c.errorf(CodeInvalidConfig, id, "", base.String()+is.Path, "%s %q: data%s: %s", spec.Type, id, is.Path, is.Message)
		}
		if retries {
			c.checkRetry(id, base.field("retry"), gjson.GetBytes(cfg, "retry"))
		}
	}
	if spec.Check != nil {
		for _, msg := range spec.Check(cfg) {
			c.errAt(CodeInvalidConfig, id, "", base, "%s %q: %s", spec.Type, id, msg)
		}
	}
	c.checkEntityMovement(id, base.field("entityMovement"), gjson.GetBytes(cfg, "entityMovement"))
}

// typeSchema is an added type's compiled config schema, compiled once a
// compilation however many nodes have the type.
func (c *compiler) typeSchema(spec *engine.NodeTypeSpec) (*engine.Form, error) {
	if f, ok := c.schemas[spec.Type]; ok {
		return f, nil
	}
	f, err := engine.CompileForm(spec.ConfigSchema)
	if err != nil {
		return nil, err
	}
	if c.schemas == nil {
		c.schemas = map[engine.NodeType]*engine.Form{}
	}
	c.schemas[spec.Type] = f
	return f, nil
}

// hint, for a missing webhookUrl, names a key of the data that looks like
// it (didYouMean).
// queueName is a pull queue's name (data.queue).
var queueName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$`)

// maxLeaseSeconds bounds a pulled task's lease (data.leaseSeconds): a day.
const maxLeaseSeconds = 86400

// checkWorkerTarget checks where a Worker's work goes: a webhookUrl
// (push) or a queue (pull), one of the two; a pulled task's leaseSeconds.
func (c *compiler) checkWorkerTarget(id string, base loc, root gjson.Result) {
	q := root.Get("queue")
	if !present(q) {
		if l := root.Get("leaseSeconds"); present(l) {
			c.errAt(CodeInvalidConfig, id, "", base.field("leaseSeconds"), "worker %q: leaseSeconds is for a pulled worker (data.queue), not a webhookUrl", id)
		}
		c.checkWebhookURL(id, base, root.Get("webhookUrl"), didYouMean(root, "webhookUrl"))
		return
	}
	if present(root.Get("webhookUrl")) {
		c.errAt(CodeInvalidConfig, id, "", base.field("queue"), "worker %q: data has both webhookUrl (push) and queue (pull): a worker takes one of the two", id)
	}
	if q.Type != gjson.String || !queueName.MatchString(q.Str) {
		c.errAt(CodeInvalidConfig, id, "", base.field("queue"), "worker %q: queue must be a name of 1 to 100 letters, digits, '.', '_', ':' or '-' (starting with a letter or digit), got %s", id, q.Raw)
	}
	if l := root.Get("leaseSeconds"); present(l) {
		if n, ok := integer(l); !ok || n < 1 || n > maxLeaseSeconds {
			c.errAt(CodeInvalidConfig, id, "", base.field("leaseSeconds"), "worker %q: leaseSeconds must be an integer from 1 to %d, got %s", id, maxLeaseSeconds, l.Raw)
		}
	}
	for _, k := range []string{"cancelUrl", "delivery", "rateLimit"} {
		if present(root.Get(k)) {
			c.errAt(CodeInvalidConfig, id, "", base.field(k), "worker %q: %s is for a pushed worker (data.webhookUrl); a pulled one takes its tasks from its queue", id, k)
		}
	}
}

func (c *compiler) checkWebhookURL(id string, base loc, r gjson.Result, hint string) {
	path := base.field("webhookUrl")
	switch {
	case !present(r):
		c.errAt(CodeInvalidWebhookURL, id, "", path, "worker %q needs a webhookUrl (push) or a queue (pull)%s", id, hint)
	case r.Type != gjson.String:
		c.errAt(CodeInvalidWebhookURL, id, "", path, "worker %q: webhookUrl must be a string", id)
	default:
		u, err := url.Parse(r.Str)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			c.errAt(CodeInvalidWebhookURL, id, "", path, "worker %q: webhookUrl %q is not an absolute http or https URL with a host", id, r.Str)
		}
	}
}

func (c *compiler) checkTimeout(id string, base loc, r gjson.Result) {
	if !present(r) {
		return
	}
	if r.Type != gjson.Number || !(r.Num > 0) || r.Num > maxTimeoutSeconds {
		c.errAt(CodeInvalidConfig, id, "", base.field("timeoutSeconds"), "node %q: timeoutSeconds must be a positive number of seconds (at most %.0f), got %s", id, maxTimeoutSeconds, r.Raw)
	}
}

// checkDelivery checks a worker's delivery policy: {"maxTries": n}.
func (c *compiler) checkDelivery(id string, path loc, r gjson.Result) {
	if !present(r) {
		return
	}
	if !r.IsObject() {
		c.errAt(CodeInvalidConfig, id, "", path, "node %q: delivery must be an object, e.g. {\"maxTries\": 12}", id)
		return
	}
	if m := r.Get("maxTries"); present(m) {
		n, ok := integer(m)
		if !ok || n < minMaxAttempts || n > maxMaxAttempts {
			c.errAt(CodeInvalidConfig, id, "", path.field("maxTries"), "node %q: delivery.maxTries must be an integer from %d to %d, got %s", id, minMaxAttempts, maxMaxAttempts, m.Raw)
		}
	}
	r.ForEach(func(k, _ gjson.Result) bool {
		if k.Str != "maxTries" {
			c.errAt(CodeInvalidConfig, id, "", path.field(k.Str), "node %q: delivery has no field %q (it takes maxTries)", id, k.Str)
		}
		return true
	})
}

func (c *compiler) checkRetry(id string, path loc, r gjson.Result) {
	if !present(r) {
		return
	}
	if !r.IsObject() {
		c.errAt(CodeInvalidConfig, id, "", path, "node %q: retry must be an object", id)
		return
	}
	if m := r.Get("maxAttempts"); present(m) {
		n, ok := integer(m)
		if !ok || n < minMaxAttempts || n > maxMaxAttempts {
			c.errAt(CodeInvalidConfig, id, "", path.field("maxAttempts"), "node %q: retry.maxAttempts must be an integer from %d to %d, got %s", id, minMaxAttempts, maxMaxAttempts, m.Raw)
		}
	}
	if b := r.Get("backoff"); present(b) {
		if b.Type != gjson.String || !contains(backoffKinds, b.Str) {
			c.errAt(CodeInvalidConfig, id, "", path.field("backoff"), "node %q: retry.backoff must be one of %s, got %s", id, strings.Join(backoffKinds, ", "), b.Raw)
		}
	}
	if m := r.Get("multiplier"); present(m) {
		switch {
		case m.Type != gjson.Number || !(m.Num >= 1) || m.Num > maxMultiplier:
			c.errAt(CodeInvalidConfig, id, "", path.field("multiplier"), "node %q: retry.multiplier must be a number from 1 to %d, got %s", id, maxMultiplier, m.Raw)
		case present(r.Get("backoff")) && r.Get("backoff").Str != "exponential":
			c.errAt(CodeInvalidConfig, id, "", path.field("multiplier"), "node %q: retry.multiplier applies to exponential backoff only, not %s", id, r.Get("backoff").Raw)
		}
	}
	if j := r.Get("jitter"); present(j) {
		fraction := j.Type == gjson.Number && j.Num >= 0 && j.Num <= 1
		word := j.Type == gjson.String && contains(jitterWords, j.Str)
		if !fraction && !word {
			c.errAt(CodeInvalidConfig, id, "", path.field("jitter"), "node %q: retry.jitter must be a fraction from 0 to 1, \"full\" or \"none\", got %s", id, j.Raw)
		}
	}
	if nr := r.Get("nonRetryable"); present(nr) {
		if !nr.IsArray() {
			c.errAt(CodeInvalidConfig, id, "", path.field("nonRetryable"), "node %q: retry.nonRetryable must be an array of error substrings", id)
		} else {
			list := nr.Array()
			if len(list) > maxNonRetryable {
				c.errAt(CodeInvalidConfig, id, "", path.field("nonRetryable"), "node %q: retry.nonRetryable has %d entries, more than %d", id, len(list), maxNonRetryable)
			}
			for i, v := range list {
				if v.Type != gjson.String || v.Str == "" {
					c.errAt(CodeInvalidConfig, id, "", path.field("nonRetryable"), "node %q: retry.nonRetryable[%d] must be a non-empty string, got %s", id, i, v.Raw)
				}
			}
		}
	}
	initial, initialOK := c.nonNegative(id, path.field("initialDelayMs"), "retry.initialDelayMs", r.Get("initialDelayMs"))
	maxDelay, maxOK := c.nonNegative(id, path.field("maxDelayMs"), "retry.maxDelayMs", r.Get("maxDelayMs"))
	if initialOK && maxOK && initial > maxDelay {
		c.errAt(CodeInvalidConfig, id, "", path.field("initialDelayMs"), "node %q: retry.initialDelayMs (%v) must not exceed retry.maxDelayMs (%v)", id, initial, maxDelay)
	}
}

// nonNegative checks an optional non-negative number; ok reports whether it
// is present and valid.
func (c *compiler) nonNegative(id string, path loc, name string, r gjson.Result) (float64, bool) {
	if !present(r) {
		return 0, false
	}
	if r.Type != gjson.Number || r.Num < 0 || math.IsInf(r.Num, 0) {
		c.errAt(CodeInvalidConfig, id, "", path, "node %q: %s must be a non-negative number of milliseconds, got %s", id, name, r.Raw)
		return 0, false
	}
	return r.Num, true
}

// integer returns the value of an integral JSON number ("3", "3.0", "3e0").
func integer(r gjson.Result) (int64, bool) {
	if r.Type != gjson.Number {
		return 0, false
	}
	f, err := strconv.ParseFloat(r.Raw, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (c *compiler) checkEntityMovement(id string, path loc, r gjson.Result) {
	if !present(r) {
		return
	}
	if !r.IsObject() {
		c.errAt(CodeInvalidConfig, id, "", path, "node %q: entityMovement must be an object", id)
		return
	}
	for _, key := range [...]string{"onSuccess", "onFailure"} {
		c.checkMovement(id, path.field(key), key, r.Get(key))
	}
	if o := r.Get("onOutcome"); present(o) {
		if !o.IsObject() {
			c.errAt(CodeInvalidConfig, id, "", path.field("onOutcome"), "node %q: entityMovement.onOutcome must be an object of outcome → movement", id)
			return
		}
		o.ForEach(func(k, v gjson.Result) bool {
			c.checkMovement(id, path.field("onOutcome").field(k.Str), "onOutcome."+k.Str, v)
			return true
		})
	}
}

// checkMovement checks one movement (entityMovement.<key>).
func (c *compiler) checkMovement(id string, apath loc, key string, a gjson.Result) {
	if !present(a) {
		return
	}
	if !a.IsObject() {
		c.errAt(CodeInvalidConfig, id, "", apath, "node %q: entityMovement.%s must be an object", id, key)
		return
	}
	switch t := a.Get("targetSectionId"); {
	case t.Type != gjson.String || t.Str == "":
		c.errAt(CodeInvalidConfig, id, "", apath.field("targetSectionId"), "node %q: entityMovement.%s.targetSectionId must be a non-empty string", id, key)
	case c.sections != nil:
		if _, ok := c.sections[t.Str]; !ok {
			c.errAt(CodeUnknownSection, id, "", apath.field("targetSectionId"), "node %q: entityMovement.%s.targetSectionId %q is not a section of the flow's board", id, key, t.Str)
		}
	}
	if ca := a.Get("completeAs"); present(ca) && (ca.Type != gjson.String || !contains(completeAsValues, ca.Str)) {
		c.errAt(CodeInvalidConfig, id, "", apath.field("completeAs"), "node %q: entityMovement.%s.completeAs must be one of %s, got %s", id, key, strings.Join(completeAsValues, ", "), ca.Raw)
	}
	if st := a.Get("setEntityType"); present(st) && st.Type != gjson.String {
		c.errAt(CodeInvalidConfig, id, "", apath.field("setEntityType"), "node %q: entityMovement.%s.setEntityType must be a string", id, key)
	}
	c.checkSetMetadata(id, apath.field("setMetadata"), key, a.Get("setMetadata"))
}

// maxSummary bounds a UX node's summary: a few values beside the
// decision, not the input again.
const maxSummary = 20

// checkSummary checks a UX node's summary: a list of gjson paths into its
// input, each a string or {"label"?, "path"}.
func (c *compiler) checkSummary(id string, path loc, r gjson.Result) {
	if !present(r) {
		return
	}
	if !r.IsArray() {
		c.errAt(CodeInvalidConfig, id, "", path, `node %q: summary must be a list of gjson paths into the input (strings, or {"label", "path"})`, id)
		return
	}
	items := r.Array()
	if len(items) > maxSummary {
		c.errAt(CodeInvalidConfig, id, "", path, "node %q: summary lists %d values (at most %d)", id, len(items), maxSummary)
	}
	for i, it := range items {
		at := path.field(strconv.Itoa(i))
		switch {
		case it.Type == gjson.String:
			if strings.TrimSpace(it.Str) == "" {
				c.errAt(CodeInvalidConfig, id, "", at, "node %q: summary[%d] must be a non-empty gjson path", id, i)
			}
		case it.IsObject():
			if p := it.Get("path"); p.Type != gjson.String || strings.TrimSpace(p.Str) == "" {
				c.errAt(CodeInvalidConfig, id, "", at.field("path"), "node %q: summary[%d].path must be a non-empty gjson path, got %s", id, i, orMissing(p))
			}
			if l := it.Get("label"); present(l) && (l.Type != gjson.String || len(l.Str) > 200) {
				c.errAt(CodeInvalidConfig, id, "", at.field("label"), "node %q: summary[%d].label must be a string of at most 200 bytes", id, i)
			}
			it.ForEach(func(k, _ gjson.Result) bool {
				if k.Str != "path" && k.Str != "label" {
					c.errAt(CodeInvalidConfig, id, "", at.field(k.Str), "node %q: summary[%d] has an unknown field %q (label, path)", id, i, k.Str)
				}
				return true
			})
		default:
			c.errAt(CodeInvalidConfig, id, "", at, `node %q: summary[%d] must be a gjson path or {"label", "path"}, got %s`, id, i, it.Raw)
		}
	}
}

func orMissing(r gjson.Result) string {
	if !r.Exists() {
		return "nothing"
	}
	return r.Raw
}

// Bounds of an entityMovement's setMetadata: the metadata is shown on
// board cards and travels with every entity read.
const (
	maxSetMetadataKeys   = 50
	maxSetMetadataKeyLen = 200
)

// checkSetMetadata checks entityMovement.<key>.setMetadata: an object of
// metadata key → gjson path into the node's output, on a movement that
// has an output (not onFailure).
func (c *compiler) checkSetMetadata(id string, path loc, key string, m gjson.Result) {
	if !present(m) {
		return
	}
	if key == "onFailure" {
		c.errAt(CodeInvalidConfig, id, "", path, "node %q: entityMovement.onFailure.setMetadata: a failed node has no output to take values from", id)
		return
	}
	if !m.IsObject() {
		c.errAt(CodeInvalidConfig, id, "", path, "node %q: entityMovement.%s.setMetadata must be an object of metadata key → gjson path into the output", id, key)
		return
	}
	n := 0
	m.ForEach(func(k, v gjson.Result) bool {
		n++
		switch {
		case k.Str == "":
			c.errAt(CodeInvalidConfig, id, "", path.field(k.Str), "node %q: entityMovement.%s.setMetadata has an empty metadata key", id, key)
		case len(k.Str) > maxSetMetadataKeyLen:
			c.errAt(CodeInvalidConfig, id, "", path.field(k.Str), "node %q: entityMovement.%s.setMetadata key is %d bytes long (at most %d)", id, key, len(k.Str), maxSetMetadataKeyLen)
		case v.Type != gjson.String || v.Str == "":
			c.errAt(CodeInvalidConfig, id, "", path.field(k.Str), "node %q: entityMovement.%s.setMetadata %q must be a non-empty gjson path string, got %s", id, key, k.Str, v.Raw)
		}
		return true
	})
	if n > maxSetMetadataKeys {
		c.errAt(CodeInvalidConfig, id, "", path, "node %q: entityMovement.%s.setMetadata sets %d keys (at most %d)", id, key, n, maxSetMetadataKeys)
	}
}

func (c *compiler) rejectEntityMovement(id string, base loc, root gjson.Result) {
	if present(root.Get("entityMovement")) {
		c.errAt(CodeInvalidConfig, id, "", base.field("entityMovement"), "node %q: entityMovement is only allowed on Worker and UX nodes", id)
	}
}

// edgeMapping validates edge vi's data and returns its mapping (nil when it
// has none). ok is false when the data is invalid.
func (c *compiler) edgeMapping(vi int, ve VisualEdge) (map[string]string, bool) {
	if len(ve.Data) == 0 {
		return nil, true
	}
	base := edgeLoc(vi).field("data")
	cd, ok := c.canonicalData(ve.Data, "", ve.ID, base)
	if !ok {
		return nil, false
	}
	m := gjson.GetBytes(cd, "mapping")
	if !present(m) {
		return nil, true
	}
	path := base.field("mapping")
	if !m.IsObject() {
		c.errAt(CodeInvalidMapping, "", ve.ID, path, "edge %q: mapping must be an object of target key → gjson path", ve.ID)
		return nil, false
	}
	var mapping map[string]string
	m.ForEach(func(k, val gjson.Result) bool {
		key := k.String()
		switch {
		case key == "":
			c.errAt(CodeInvalidMapping, "", ve.ID, path.field(key), "edge %q: mapping has an empty target key", ve.ID)
			ok = false
		case val.Type != gjson.String || val.Str == "":
			c.errAt(CodeInvalidMapping, "", ve.ID, path.field(key), "edge %q: mapping %q must be a non-empty gjson path string, got %s", ve.ID, key, val.Raw)
			ok = false
		default:
			if mapping == nil {
				mapping = make(map[string]string)
			}
			mapping[key] = val.Str
		}
		return true
	})
	return mapping, ok
}
