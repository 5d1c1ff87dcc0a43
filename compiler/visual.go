package compiler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stitchd/stitchd/internal/jsonlimit"
)

// VisualGraph is the React Flow JSON the canvas sends.
type VisualGraph struct {
	Nodes []VisualNode `json:"nodes"`
	Edges []VisualEdge `json:"edges"`
	// Settings are the flow's own: {"deadlineSeconds": N}.
	Settings json.RawMessage `json:"settings,omitempty"`
}

// VisualNode is one node of a visual graph. Fields the compiler does not use
// (style, width, selected, …) are dropped by ParseVisual; keep the original
// bytes if they must be preserved.
type VisualNode struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	Position json.RawMessage `json:"position,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
}

// VisualEdge is one edge of a visual graph.
type VisualEdge struct {
	ID     string          `json:"id"`
	Source string          `json:"source"`
	Target string          `json:"target"`
	Data   json.RawMessage `json:"data,omitempty"`
}

// ParseVisual decodes a visual graph. Malformed JSON or a document of the
// wrong shape (not an object, nodes or edges not arrays, an id that is not a
// string, a null node or edge, …) is an ordinary error, not an *Error: the
// graph could not even be read.
func ParseVisual(data []byte) (VisualGraph, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return VisualGraph{}, errors.New("error parsing visual graph: not a JSON object")
	}
	var raw struct {
		Nodes    []json.RawMessage `json:"nodes"`
		Edges    []json.RawMessage `json:"edges"`
		Settings json.RawMessage   `json:"settings"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return VisualGraph{}, fmt.Errorf("error parsing visual graph: %s", jsonlimit.DecodeMessage(err))
	}
	v := VisualGraph{
		Nodes:    make([]VisualNode, len(raw.Nodes)),
		Edges:    make([]VisualEdge, len(raw.Edges)),
		Settings: raw.Settings,
	}
	for i, r := range raw.Nodes {
		if !isJSONObject(r) {
			return VisualGraph{}, fmt.Errorf("error parsing visual graph: nodes[%d] is not an object", i)
		}
		if err := json.Unmarshal(r, &v.Nodes[i]); err != nil {
			return VisualGraph{}, fmt.Errorf("error parsing visual graph: nodes[%d]: %s", i, jsonlimit.DecodeMessage(err))
		}
	}
	for i, r := range raw.Edges {
		if !isJSONObject(r) {
			return VisualGraph{}, fmt.Errorf("error parsing visual graph: edges[%d] is not an object", i)
		}
		if err := json.Unmarshal(r, &v.Edges[i]); err != nil {
			return VisualGraph{}, fmt.Errorf("error parsing visual graph: edges[%d]: %s", i, jsonlimit.DecodeMessage(err))
		}
	}
	return v, nil
}

func isJSONObject(r json.RawMessage) bool {
	r = bytes.TrimLeft(r, " \t\r\n")
	return len(r) > 0 && r[0] == '{'
}
