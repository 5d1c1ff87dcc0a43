package compiler_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/stitchd/stitchd/compiler"
	"github.com/stitchd/stitchd/engine"
)

func FuzzCompile(f *testing.F) {
	for _, seed := range []string{
		apiExample,
		`{}`,
		`{"nodes":[{"id":"a","type":"worker","data":{"webhookUrl":"http://x/a"}}]}`,
		`{"nodes":[{"id":"a","type":"UX"},{"id":"b","type":"UX"},{"id":"c","type":"UX"}],"edges":[{"id":"1","source":"a","target":"b"},{"id":"2","source":"b","target":"c"},{"id":"3","source":"c","target":"a"}]}`,
		`{"nodes":[{"id":"s1","type":"Splitter","data":{"arrayPath":"x"}},{"id":"s2","type":"Splitter","data":{"arrayPath":"y"}},{"id":"w","type":"UX"},{"id":"c2","type":"Collector"},{"id":"c1","type":"Collector"},{"id":"w_0","type":"UX"}],` +
			`"edges":[{"id":"1","source":"s1","target":"s2"},{"id":"2","source":"s2","target":"w"},{"id":"3","source":"w","target":"c2"},{"id":"4","source":"c2","target":"c1"},{"id":"5","source":"c1","target":"w_0"}]}`,
		`{"nodes":[{"id":"s","type":"Splitter","data":{"arrayPath":"x"}},{"id":"a","type":"UX"},{"id":"b","type":"UX"},{"id":"c","type":"Collector"},{"id":"d","type":"Collector"}],` +
			`"edges":[{"id":"1","source":"s","target":"a"},{"id":"2","source":"s","target":"b"},{"id":"3","source":"a","target":"c"},{"id":"4","source":"b","target":"d"},{"id":"5","source":"a","target":"d"},{"id":"6","source":"s","target":"c"}]}`,
		`{"nodes":[{"id":"a","type":"UX","data":{"entityMovement":{"onSuccess":{"targetSectionId":"s"}}}},{"id":"b","type":"Collector"}],"edges":[{"id":"1","source":"a","target":"b","data":{"mapping":{"k":"v","":1}}}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := compiler.ParseVisual(data)
		if err != nil {
			return
		}
		eg, err := compiler.Compile(v, builtins)
		_, boardErr := compiler.CompileWithOptions(v, compiler.Options{BoardSections: []string{"s"}, Types: builtins})
		if err != nil {
			checkProblems(t, err)
			if boardErr == nil {
				t.Fatalf("compiles with board sections but not without: %v", err)
			}
			return
		}
		if boardErr != nil {
			// Only the board check may fail.
			for _, p := range checkProblems(t, boardErr) {
				if p.Code != compiler.CodeUnknownSection {
					t.Fatalf("board sections caused problem %+v", p)
				}
			}
		}
		first, err := json.Marshal(eg)
		if err != nil {
			t.Fatal(err)
		}
		eg2, err := compiler.Compile(v, builtins)
		if err != nil {
			t.Fatalf("second compilation failed: %v", err)
		}
		second, err := json.Marshal(eg2)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("non-deterministic output:\n%s\n%s", first, second)
		}
		if len(eg.Adjacency) != len(eg.Nodes) || len(eg.Upstream) != len(eg.Nodes) {
			t.Fatalf("adjacency/upstream do not cover the nodes")
		}
		for id, next := range eg.Adjacency {
			if _, ok := eg.Nodes[id]; !ok {
				t.Fatalf("adjacency key %q is not a node", id)
			}
			for _, n := range next {
				if _, ok := eg.Nodes[n]; !ok {
					t.Fatalf("adjacency target %q is not a node", n)
				}
			}
		}
		for id, n := range eg.Nodes {
			if !json.Valid(n.Config) {
				t.Fatalf("node %q config is not valid JSON", id)
			}
			canon, err := compiler.Canonical(n.Config)
			if err != nil || !bytes.Equal(canon, n.Config) {
				t.Fatalf("node %q config is not canonical", id)
			}
			if n.Region != "" {
				if _, ok := eg.Regions[n.Region]; !ok {
					t.Fatalf("node %q in unknown region %q", id, n.Region)
				}
			}
		}
		for s, r := range eg.Regions {
			if r.Splitter != s || r.Collector == "" || len(r.Members) == 0 {
				t.Fatalf("bad region %+v", r)
			}
		}
	})
}

func FuzzCanonical(f *testing.F) {
	for _, seed := range []string{apiExample, `{"b":1,"a":[1,{"d":"\u00e9","c":null}]}`, `"\ud800"`, `{"a":1,"a":2}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c1, err := compiler.Canonical(data)
		if err != nil {
			if json.Valid(data) {
				t.Fatalf("valid JSON rejected: %v", err)
			}
			return
		}
		if !json.Valid(c1) {
			t.Fatalf("canonical form %q is not valid JSON", c1)
		}
		c2, err := compiler.Canonical(c1)
		if err != nil || !bytes.Equal(c1, c2) {
			t.Fatalf("canonical form is not a fixed point: %q → %q", c1, c2)
		}
		var a, b any
		if json.Unmarshal(data, &a) == nil && json.Unmarshal(c1, &b) == nil {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if !bytes.Equal(ja, jb) {
				t.Fatalf("canonical form changes the value: %s vs %s", ja, jb)
			}
		}
	})
}

func checkProblems(t *testing.T, err error) []engine.Problem {
	t.Helper()
	var cerr *compiler.Error
	if !errors.As(err, &cerr) || len(cerr.Problems) == 0 {
		t.Fatalf("error %v is not a non-empty *compiler.Error", err)
	}
	for _, p := range cerr.Problems {
		if p.Code == "" || p.Path == "" || p.Message == "" {
			t.Fatalf("incomplete problem %+v", p)
		}
	}
	return cerr.Problems
}

// FuzzRegions builds small graphs of valid nodes from the fuzz bytes
// and checks the region analysis against a literal implementation of the
// rule: from each Splitter walk forward, raising the level at a Splitter and
// lowering it at a Collector; the Collector reached at level 0 closes the
// Splitter.
func FuzzRegions(f *testing.F) {
	f.Add([]byte{5, 2, 0, 1, 3, 0, 0, 1, 1, 2, 2, 3, 3, 4})
	f.Add([]byte{8, 2, 2, 0, 3, 3, 1, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 1, 7})
	f.Add([]byte{6, 2, 0, 0, 3, 3, 0, 0, 1, 0, 2, 1, 3, 2, 3, 3, 4, 1, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		n := 2 + int(data[0])%20
		data = data[1:]
		types := []string{"Worker", "UX", "Splitter", "Collector"}
		var g compiler.VisualGraph
		typ := make([]string, n)
		for i := range n {
			typ[i] = types[0]
			if i < len(data) {
				typ[i] = types[int(data[i])%4]
			}
			g.Nodes = append(g.Nodes, regionNode(i, typ[i]))
		}
		if len(data) > n {
			data = data[n:]
		} else {
			data = nil
		}
		seen := map[[2]int]bool{}
		succ := make([][]int, n)
		pred := make([][]int, n)
		for k := 0; k+1 < len(data); k += 2 {
			u, v := int(data[k])%n, int(data[k+1])%n
			if data[k]&0x80 == 0 && u > v {
				u, v = v, u
			}
			if u == v || seen[[2]int{u, v}] {
				continue
			}
			seen[[2]int{u, v}] = true
			succ[u] = append(succ[u], v)
			pred[v] = append(pred[v], u)
			g.Edges = append(g.Edges, edge("e"+itoa(k), "n"+itoa(u), "n"+itoa(v)))
		}

		eg, err := compiler.Compile(g, builtins)
		var problems []engine.Problem
		if err != nil {
			problems = checkProblems(t, err)
			for _, p := range problems {
				if p.Code == compiler.CodeCycle {
					return // regions are not analysed on cyclic graphs
				}
			}
		}
		if err == nil && len(eg.Warnings) == 0 {
			// Node order does not change the result.
			rev := compiler.VisualGraph{Nodes: slices.Clone(g.Nodes), Edges: g.Edges}
			slices.Reverse(rev.Nodes)
			eg2, err2 := compiler.Compile(rev, builtins)
			if err2 != nil || !bytes.Equal(mustJSON(t, eg), mustJSON(t, eg2)) {
				t.Fatalf("node order changes the result: %v", err2)
			}
		}
		want, ok := regionOracle(typ, succ, pred)
		if ok != (err == nil) {
			t.Fatalf("oracle ok=%v, compile error: %v", ok, err)
		}
		if !ok {
			return
		}
		for s, r := range want {
			got := eg.Regions["n"+itoa(s)]
			if got == nil || got.Collector != "n"+itoa(r.collector) || len(got.Members) != len(r.members) {
				t.Fatalf("region of n%d: got %+v, want collector n%d and %d members", s, got, r.collector, len(r.members))
			}
			for _, m := range got.Members {
				if !r.members[m] {
					t.Fatalf("region of n%d: unexpected member %s", s, m)
				}
			}
		}
		if len(eg.Regions) != len(want) {
			t.Fatalf("got %d regions, want %d", len(eg.Regions), len(want))
		}
	})
}

func regionNode(i int, typ string) compiler.VisualNode {
	id := "n" + itoa(i)
	switch typ {
	case "Worker":
		return worker(id)
	case "Splitter":
		return splitter(id)
	default:
		return node(id, typ, "")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

type oracleRegion struct {
	collector int
	members   map[string]bool
}

// regionOracle applies the region rules literally, one Splitter at a time.
func regionOracle(typ []string, succ, pred [][]int) (map[int]oracleRegion, bool) {
	regions := map[int]oracleRegion{}
	closed := map[int]bool{}
	for s := range typ {
		if typ[s] != "Splitter" {
			continue
		}
		level := map[int]int{}
		collectors := map[int]bool{}
		type item struct{ v, l int }
		queue := []item{}
		for _, v := range succ[s] {
			if typ[v] == "Collector" {
				return nil, false // joined directly to its collector
			}
			queue = append(queue, item{v, 0})
		}
		if len(succ[s]) == 0 {
			return nil, false
		}
		for len(queue) > 0 {
			it := queue[0]
			queue = queue[1:]
			if l, ok := level[it.v]; ok {
				if l != it.l {
					return nil, false // two nesting levels
				}
				continue
			}
			level[it.v] = it.l
			next := it.l
			switch typ[it.v] {
			case "Collector":
				if it.l == 0 {
					collectors[it.v] = true
					continue
				}
				next--
			case "Splitter":
				next++
			}
			if len(succ[it.v]) == 0 {
				return nil, false // no collector
			}
			for _, w := range succ[it.v] {
				queue = append(queue, item{w, next})
			}
		}
		if len(collectors) != 1 {
			return nil, false
		}
		r := oracleRegion{members: map[string]bool{}}
		for c := range collectors {
			r.collector = c
			closed[c] = true
		}
		for v := range level {
			if v != r.collector {
				r.members["n"+itoa(v)] = true
			}
		}
		// Members are entered only from the splitter or other members, and
		// the collector only from members.
		for v := range level {
			for _, p := range pred[v] {
				if (p != s || v == r.collector) && !r.members["n"+itoa(p)] {
					return nil, false
				}
			}
		}
		regions[s] = r
	}
	for v, t := range typ {
		if t == "Collector" && !closed[v] {
			return nil, false // orphan
		}
	}
	return regions, true
}
