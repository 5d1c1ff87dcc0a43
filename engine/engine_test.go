package engine

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMergeInputs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ups  []Upstream
		want string
	}{
		{"none", nil, `{}`},
		{"one object", []Upstream{{NodeID: "a", Output: json.RawMessage(`{"x":1}`)}}, `{"x":1}`},
		{"objects merged, later edges win", []Upstream{
			{NodeID: "a", Output: json.RawMessage(`{"x":1,"y":1}`)},
			{NodeID: "b", Output: json.RawMessage(`{"y":2}`)}}, `{"x":1,"y":2}`},
		{"non-object under node id", []Upstream{
			{NodeID: "a", Output: json.RawMessage(`"s"`)},
			{NodeID: "b", Output: json.RawMessage(`[1,2]`)},
			{NodeID: "c", Output: json.RawMessage(`3`)},
			{NodeID: "d", Output: json.RawMessage(`false`)}}, `{"a":"s","b":[1,2],"c":3,"d":false}`},
		{"null output skipped", []Upstream{{NodeID: "a", Output: json.RawMessage(`null`)}, {NodeID: "b"}}, `{}`},
		{"mapping replaces merge for its edge", []Upstream{
			{NodeID: "a", Output: json.RawMessage(`{"p":{"q":5},"drop":1}`), Mapping: map[string]string{"v": "p.q", "whole": "@this", "none": "zz"}},
			{NodeID: "b", Output: json.RawMessage(`{"k":1}`)}}, `{"v":5,"whole":{"p":{"q":5},"drop":1},"k":1}`},
		{"mapping of array element", []Upstream{
			{NodeID: "a", Output: json.RawMessage(`[{"n":"x"},{"n":"y"}]`), Mapping: map[string]string{"second": "1.n", "count": "#"}}}, `{"second":"y","count":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := MergeInputs(tt.ups)
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(got))
		})
	}
}

func TestExtractItems(t *testing.T) {
	t.Parallel()
	items, err := ExtractItems(json.RawMessage(`{"leads":[{"a":1},"b",3]}`), "leads")
	require.NoError(t, err)
	require.Equal(t, []json.RawMessage{json.RawMessage(`{"a":1}`), json.RawMessage(`"b"`), json.RawMessage(`3`)}, items)
	items, err = ExtractItems(json.RawMessage(`{"x":{"y":[]}}`), "x.y")
	require.NoError(t, err)
	require.Empty(t, items)
	// A path with a modifier: new text, not the input's.
	items, err = ExtractItems(json.RawMessage(`{"a":[1,22,{"b":"333"}]}`), "a|@reverse")
	require.NoError(t, err)
	require.Equal(t, []json.RawMessage{json.RawMessage(`{"b":"333"}`), json.RawMessage(`22`), json.RawMessage(`1`)}, items)
	_, err = ExtractItems(json.RawMessage(`{"x":1}`), "leads")
	require.ErrorContains(t, err, "matches nothing")
	_, err = ExtractItems(json.RawMessage(`{"leads":"abc"}`), "leads")
	require.ErrorContains(t, err, "is a string, not an array")
	_, err = ExtractItems(json.RawMessage(`{"leads":{"a":1}}`), "leads")
	require.ErrorContains(t, err, "is a object, not an array")
}

// TestExtractItemsSharesTheInput: items are the input's own bytes (a big
// fan-out does not copy its items), capped so that appending to one cannot
// overwrite the input.
func TestExtractItemsSharesTheInput(t *testing.T) {
	t.Parallel()
	input := json.RawMessage(`{"leads": [ {"a":1}, "b" ,3 ]}`)
	items, err := ExtractItems(input, "leads")
	require.NoError(t, err)
	require.Len(t, items, 3)
	for i, at := range []int{12, 21, 26} {
		require.Same(t, &input[at], &items[i][0], "item %d is not the input's own bytes", i)
		require.Equal(t, len(items[i]), cap(items[i]), "item %d is capped", i)
	}
	_ = append(items[1], 'x')
	require.Equal(t, `{"leads": [ {"a":1}, "b" ,3 ]}`, string(input)) //nolint:testifylint // the exact bytes: the input is not written through
}

func FuzzMergeInputs(f *testing.F) {
	f.Add([]byte(`{"x":1}`), []byte(`"s"`), "p.q")
	f.Add([]byte(`[1,2,3]`), []byte(`{"a":{"b":[1]}}`), "@this")
	f.Add([]byte(`null`), []byte(`{`), "#")
	f.Fuzz(func(t *testing.T, a, b []byte, path string) {
		if !json.Valid(a) || !json.Valid(b) {
			return
		}
		out, err := MergeInputs([]Upstream{{NodeID: "a", Output: a}, {NodeID: "b", Output: b, Mapping: map[string]string{"m": path}}})
		if err != nil {
			return
		}
		if !json.Valid(out) || out[0] != '{' {
			t.Fatalf("merge produced %q, not a JSON object", out)
		}
	})
}

func BenchmarkMergeInputs(b *testing.B) {
	ups := []Upstream{
		{NodeID: "a", Output: json.RawMessage(`{"lead":{"name":"Ada","email":"ada@example.com"},"score":7,"tags":["x","y"]}`)},
		{NodeID: "b", Output: json.RawMessage(`"plain"`)},
		{NodeID: "c", Output: json.RawMessage(`{"enriched":{"company":"Analytical Engines","size":12}}`), Mapping: map[string]string{"company": "enriched.company"}},
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := MergeInputs(ups); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	g := &ExecutionGraph{Nodes: map[string]*Node{
		"score":   {ID: "score"},
		"step_2":  {ID: "step_2", Depth: 2},
		"item":    {ID: "item", Depth: 1},
		"item_1":  {ID: "item_1"}, // "item_1" is this static node or item at [1]
		"fetch_9": {ID: "fetch_9"},
	}}
	for key, want := range map[string]struct {
		id  string
		idx []int
	}{
		"score":       {"score", []int{}},
		"step_2_10_0": {"step_2", []int{10, 0}},
		"item_3":      {"item", []int{3}},
		"fetch_9":     {"fetch_9", []int{}},
	} {
		n, idx, ok := g.parseKey(key)
		require.True(t, ok, key)
		require.Equal(t, want.id, n.ID, key)
		require.Equal(t, want.idx, idx, key)
		require.Equal(t, key, InstanceKey(n.ID, idx))
	}
	for _, key := range []string{"item_1", "missing", "score_1", "item_01", "item_", "step_2_1", "item_-1", "_1"} {
		_, _, ok := g.parseKey(key)
		require.False(t, ok, key)
	}
}

// TestNodeStatusEncodesAsItsMap: the node.status payload struct writes the
// bytes the map it replaced wrote — an empty error included.
func TestNodeStatusEncodesAsItsMap(t *testing.T) {
	t.Parallel()
	boom, empty := "boom \"x\"", ""
	for _, p := range []nodeStatus{
		{Status: StatusRunning, Attempt: 1, NodeID: "score"},
		{Status: StatusFailed, Attempt: 3, NodeID: "n<&>", Error: &boom},
		{Status: StatusFailed, Attempt: 1, NodeID: "n", Error: &empty},
	} {
		m := map[string]any{"status": p.Status, "attempt": p.Attempt, "node_id": p.NodeID}
		if p.Error != nil {
			m["error"] = *p.Error
		}
		want, err := json.Marshal(m)
		require.NoError(t, err)
		got, _ := json.Marshal(&p)
		require.Equal(t, string(want), string(got))
	}
}
