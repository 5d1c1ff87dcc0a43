package compiler

import (
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// CodeInvalidID is reported when a node id is not in the safe set (see MaxNodeIDLen), or an
// edge id is too long or holds a control character.
const CodeInvalidID = "invalid_id"

// CodeTooLong is reported when a label (a node's or an edge's data.label) is longer than
// MaxLabelLen characters.
const CodeTooLong = "too_long"

// Bounds on ids and labels. A node id travels inside callback tokens
// (claims separated by newlines), in URL paths (approve, retry), in
// instance keys and in logs: an id with a newline made every callback 401,
// one with '/', ';', '=', quotes, '<', '>' or a space could not be
// approved or retried. Node ids are therefore 1 to 64 characters of
// [A-Za-z0-9_.-], starting with a letter or digit.
const (
	MaxNodeIDLen = 64
	MaxEdgeIDLen = 255
	MaxLabelLen  = 200
)

// checkIDs reports node ids outside the safe set, edge ids that are too
// long or hold control characters, and labels that are too long.
func (c *compiler) checkIDs() {
	for i, vn := range c.v.Nodes {
		if vn.ID != "" && !safeNodeID(vn.ID) {
			c.errorf(CodeInvalidID, vn.ID, "", nodePath(i)+".id",
				"node id %s must be 1 to %d characters of letters, digits, '_', '.' and '-', starting with a letter or digit",
				quoteShort(vn.ID), MaxNodeIDLen)
		}
		c.checkLabel(vn.ID, "", nodeLoc(i), vn.Data)
	}
	for i, ve := range c.v.Edges {
		if len(ve.ID) > MaxEdgeIDLen || hasControl(ve.ID) {
			c.errorf(CodeInvalidID, "", ve.ID, edgePath(i)+".id",
				"edge id %s must be at most %d bytes without control characters", quoteShort(ve.ID), MaxEdgeIDLen)
		}
		c.checkLabel("", ve.ID, edgeLoc(i), ve.Data)
	}
}

func (c *compiler) checkLabel(nodeID, edgeID string, at loc, data []byte) {
	l := gjson.GetBytes(data, "label")
	if l.Type == gjson.String && utf8.RuneCountInString(l.Str) > MaxLabelLen {
		c.errAt(CodeTooLong, nodeID, edgeID, at.field("data").field("label"),
			"label is %d characters long (at most %d)", utf8.RuneCountInString(l.Str), MaxLabelLen)
	}
}

func safeNodeID(id string) bool {
	if len(id) > MaxNodeIDLen || !isAlnum(id[0]) {
		return false
	}
	for i := 1; i < len(id); i++ {
		if b := id[i]; !isAlnum(b) && b != '_' && b != '.' && b != '-' {
			return false
		}
	}
	return true
}

func isAlnum(b byte) bool {
	return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')
}

func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// quoteShort quotes s for a message, cut to 80 bytes.
func quoteShort(s string) string {
	if len(s) <= 80 {
		return strconv.Quote(s)
	}
	cut := 80
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}
