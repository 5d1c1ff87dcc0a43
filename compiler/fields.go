package compiler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
)

// knownDataKeys are the keys a node's data may hold, any type: what the
// node types read, and the editor's own (label, description). A key
// outside them is likely a typo: a warning names it, and the nearest
// known key.
var knownDataKeys = []string{
	"arrayPath", "assignees", "body", "cancelUrl", "credential", "delivery", "description", "duration", "entityMovement", "escalation", "event", "expression", "flow", "form",
	"formOutcomes", "headers", "join", "key", "label", "leaseSeconds", "maxConcurrency", "method", "onTimeout", "outcomes", "passEntity", "prompt", "queue",
	"rateLimit", "rejectPolicy", "remindAfterSeconds", "requiredApprovals", "retry", "separationOfDuties", "setVariables", "successCodes",
	"summary", "timeoutSeconds", "timezone", "toleratedFailures", "until", "url", "version", "webhookUrl",
}

// checkUnknownKeys warns of each key of node data that no node type reads.
func (c *compiler) checkUnknownKeys(id string, base loc, root gjson.Result) {
	root.ForEach(func(k, _ gjson.Result) bool {
		if slices.Contains(knownDataKeys, k.Str) {
			return true
		}
		msg := fmt.Sprintf("node %q: data has a field %q that no node reads (ignored)", id, k.Str)
		if near := nearestKey(k.Str, knownDataKeys); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", near)
		}
		c.warnings = append(c.warnings, engine.Problem{Code: CodeUnknownField, NodeID: id, Path: base.field(k.Str).String(), Message: msg})
		return true
	})
}

// didYouMean is " (did you mean "x"?)" when data holds a key close to the
// missing key want, else "".
func didYouMean(root gjson.Result, want string) string {
	out := ""
	root.ForEach(func(k, _ gjson.Result) bool {
		if k.Str != want && closeKeys(k.Str, want) {
			out = fmt.Sprintf(" (the data has %q: did you mean %q?)", k.Str, want)
			return false
		}
		return true
	})
	return out
}

// nearestKey is the key of keys s most likely misspells ("" for none).
func nearestKey(s string, keys []string) string {
	for _, k := range keys {
		if closeKeys(s, k) {
			return k
		}
	}
	return ""
}

// closeKeys: the same but for case, or at most two edits apart (one for
// keys of four letters or fewer).
func closeKeys(a, b string) bool {
	if strings.EqualFold(a, b) {
		return true
	}
	limit := 2
	if min(len(a), len(b)) <= 4 {
		limit = 1
	}
	return editDistance(strings.ToLower(a), strings.ToLower(b)) <= limit
}

// editDistance is the Levenshtein distance of two short keys.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
