package browser_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUIRenameRenamesReferences: renaming a step renames what reads it —
// steps.<id> and steps["<id>"] in other steps' expressions and in an
// edge's condition, and its entry in another step's pinned sample — says
// how many, and the flow saves without a broken reference (it used to
// save refused: "steps.t1: no step has the id").
func TestUIRenameRenamesReferences(t *testing.T) {
	s := newStack(t)
	node := func(id string, x int, expr string) map[string]any {
		return map[string]any{"id": id, "type": "Transform", "position": map[string]any{"x": x, "y": 0}, "data": map[string]any{"expression": expr}}
	}
	t3 := node("t3", 640, `{"z": steps.t1.output.x, "t1s": "steps.t10 is another"}`)
	t3["pinned"] = map[string]any{"input": map[string]any{}, "steps": map[string]any{"t1": map[string]any{"output": map[string]any{"x": 5}}}}
	id := s.editorFlow("Renamed", []map[string]any{
		node("t1", 0, `{"x": run.input.x}`),
		node("t2", 320, `{"y": steps["t1"].output.x + 1}`),
		t3,
		node("t10", 320, `{"w": 1}`),
		node("t4", 640, `{"no": true}`),
	}, []map[string]any{
		{"id": "e1", "source": "t1", "target": "t2"},
		{"id": "e0", "source": "t1", "target": "t10"},
		{"id": "e2", "source": "t2", "target": "t3", "data": map[string]any{"condition": "steps.t1.output.x > 0"}},
		{"id": "e3", "source": "t2", "target": "t4", "data": map[string]any{"default": true}},
	}, nil)
	s.run("open", chromedp.Navigate(s.url+"/flows/"+id), tokenSignIn(token))
	s.settleInCanvas(canvasNode("t1"))
	s.run("select t1", chromedp.Click(canvasNode("t1"), chromedp.ByQuery), chromedp.WaitVisible(`form[aria-label="Transform t1 settings"]`, chromedp.ByQuery))
	s.run("rename", chromedp.Focus("#node-id", chromedp.ByQuery), setValue("#node-id", "first"), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(`form[aria-label="Transform first settings"]`, chromedp.ByQuery))
	s.waitJS("said", `(document.querySelector(".settings .field .hint")?.innerText ?? "").includes("steps.t1")`)
	s.shot("rn01-renamed-with-its-references")
	require.Equal(t, "3 references to steps.t1 now name first.", s.text(".settings .field .hint"))

	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("saved", `document.body.innerText.includes("Saved as version 2.")`)
	var f struct {
		Graph struct {
			Nodes []struct {
				ID     string
				Data   map[string]any
				Pinned map[string]any
			}
			Edges []struct {
				ID   string
				Data map[string]any
			}
		}
	}
	s.api("GET", "/flows/"+id, nil, &f)
	data := map[string]map[string]any{}
	pinned := map[string]map[string]any{}
	for _, n := range f.Graph.Nodes {
		data[n.ID], pinned[n.ID] = n.Data, n.Pinned
	}
	require.Contains(t, data, "first")
	require.NotContains(t, data, "t1")
	require.Equal(t, `{"y": steps["first"].output.x + 1}`, data["t2"]["expression"])
	t3Want := "{" + `"z": steps.first.output.x, "t1s": "steps.t10 is another"` + "}" // an expression, not JSON
	require.Equal(t, t3Want, data["t3"]["expression"], "steps.t10 names another step")
	require.Equal(t, `{"w": 1}`, data["t10"]["expression"])
	require.Equal(t, map[string]any{"first": map[string]any{"output": map[string]any{"x": 5.0}}}, pinned["t3"]["steps"], "the pinned sample's entry moves")
	for _, e := range f.Graph.Edges {
		if e.ID == "e2" {
			require.Equal(t, "steps.first.output.x > 0", e.Data["condition"])
		}
	}
}
