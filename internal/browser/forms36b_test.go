package browser_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/testkit"
)

// TestUITaskFormLeadsToTheWrongField (QA 36b): on a task page whose form
// is longer than the screen, pressing Approve with a required field empty
// said "The answer does not fit the form: see the fields marked above."
// under the form and left the focus on the button: the person (the
// keyboard's, the screen reader's) had to hunt for the field. The focus
// goes to the first wrong field now. And a field whose value missed the
// form's pattern said only "String does not match pattern.": it names the
// pattern.
func TestUITaskFormLeadsToTheWrongField(t *testing.T) {
	s := newStack(t)
	// Raw JSON keeps the fields in their written order (docs/forms.md).
	graph := json.RawMessage(`{"nodes": [{"id": "refund", "type": "UX", "position": {"x": 0, "y": 0}, "data": {"label": "Refund", "prompt": "Refund this order?",
		"form": {"type": "object", "required": ["amount", "code"], "properties": {
			"amount": {"type": "number", "minimum": 0, "maximum": 500, "title": "Amount (EUR)"},
			"reason": {"enum": ["damaged", "late", "other"]},
			"note": {"type": "string", "maxLength": 200},
			"email": {"type": "string", "format": "email"},
			"when": {"type": "string", "format": "date"},
			"tags": {"type": "array", "items": {"type": "string"}},
			"code": {"type": "string", "pattern": "^[A-Z]{3}$", "title": "Cost centre"}}}}}], "edges": []}`)
	var f struct{ ID string }
	s.api("POST", "/flows", map[string]any{"name": "Refunds", "graph": graph}, &f)
	var run struct{ ID string }
	s.api("POST", "/flows/"+f.ID+"/runs", map[string]any{"input": map[string]any{"order": 7}}, &run)
	s.run("task", chromedp.Navigate(s.url+"/approvals/"+run.ID+"/refund"), tokenSignIn(token))
	s.waitJS("the form", `!!document.querySelector('.task-form [id$="_code"]')`)

	s.run("approve empty", chromedp.Evaluate(`document.querySelector('button[data-outcome="approve"]').scrollIntoView()`, nil),
		chromedp.Click(`button[data-outcome="approve"]`, chromedp.ByQuery))
	s.waitJS("refused", `!!document.querySelector('.decide-error[data-code="form_invalid"]')`)
	s.waitJS("the focus on the first wrong field", `document.activeElement?.id?.endsWith("_amount")`)
	s.shot("qa36b-form-focus")

	s.run("fill", setValue(`[id$="_amount"]`, "20"), setValue(`[id$="_code"]`, "ab"),
		chromedp.Click(`button[data-outcome="approve"]`, chromedp.ByQuery))
	s.waitJS("the code refused", fieldError("", "code")+` !== ""`)
	require.Equal(t, "must match the pattern ^[A-Z]{3}$", s.evalString(fieldError("", "code")))
	s.waitJS("the focus on the code", `document.activeElement?.id?.endsWith("_code")`)
	require.Empty(t, s.evalString(fieldError("", "amount")), "the amount is fine now")

	s.run("fix", setValue(`[id$="_code"]`, "ABC"), chromedp.Click(`button[data-outcome="approve"]`, chromedp.ByQuery))
	testkit.Eventually(t, 20*time.Second, func() bool {
		var r struct {
			Nodes map[string]struct{ Status string }
		}
		s.api("GET", "/runs/"+run.ID, nil, &r)
		return r.Nodes["refund"].Status == "completed"
	}, "the answer that fits to complete the step")
}

// evalString evaluates a JavaScript expression that gives a string.
func (s *stack) evalString(expr string) string {
	s.t.Helper()
	var v string
	s.run("eval", chromedp.Evaluate(expr, &v))
	return v
}
