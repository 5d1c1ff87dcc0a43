package web

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxNameLen bounds the names given to flows, boards, sections and
// entities (and an entity's type and email): they are shown in lists and
// on every card of a board, not documents.
const maxNameLen = 200

// checkName is a 400 when v, the value of field, is longer than
// maxNameLen characters.
// newName checks a rename: trimmed, not empty, within checkName's bounds;
// it returns the trimmed name.
func newName(name string) (*string, error) {
	n := strings.TrimSpace(name)
	if n == "" {
		return nil, badRequest("name must not be empty")
	}
	if err := checkName("name", n); err != nil {
		return nil, err
	}
	return &n, nil
}

func checkName(field, v string) error {
	if n := utf8.RuneCountInString(v); n > maxNameLen {
		return badRequest(fmt.Sprintf("%s is %d characters long (at most %d)", field, n, maxNameLen))
	}
	return nil
}
