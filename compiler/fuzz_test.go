package compiler_test

import (
	"bytes"
	"encoding/json"
	"errors"
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
		eg, err := compiler.Compile(v)
		_, boardErr := compiler.CompileWithOptions(v, compiler.Options{BoardSections: []string{"s"}})
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
		eg2, err := compiler.Compile(v)
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
