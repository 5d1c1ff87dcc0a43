package web

import (
	"fmt"
	"unicode/utf8"
)

// maxNameLen bounds the names given to flows, boards, sections and
// entities (and an entity's type and email): they are shown in lists and
// on every card of a board, not documents.
const maxNameLen = 200

// checkName is a 400 when v, the value of field, is longer than
// maxNameLen characters.
func checkName(field, v string) error {
	if n := utf8.RuneCountInString(v); n > maxNameLen {
		return badRequest(fmt.Sprintf("%s is %d characters long (at most %d)", field, n, maxNameLen))
	}
	return nil
}
