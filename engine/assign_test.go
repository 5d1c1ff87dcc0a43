package engine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAssigneesOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		v    any
		want *Assignees
		err  string
	}{
		{"an email", " Ada@Example.com ", &Assignees{Users: []string{"ada@example.com"}, Groups: []string{}}, ""},
		{"a list", []any{"a@x.io", "b@x.io", "A@x.io"}, &Assignees{Users: []string{"a@x.io", "b@x.io"}, Groups: []string{}}, ""},
		{"users and groups", map[string]any{"users": "a@x.io", "groups": []any{"Finance", "ops"}},
			&Assignees{Users: []string{"a@x.io"}, Groups: []string{"Finance", "ops"}}, ""},
		{"groups only", map[string]any{"groups": []any{"ops"}}, &Assignees{Users: []string{}, Groups: []string{"ops"}}, ""},
		{"null", nil, nil, "gave null, not an email"},
		{"a number", 3, nil, "gave a number"},
		{"not an email", "ada", nil, `"ada" is not an email address`},
		{"an empty string", "", nil, `"" is not an email address`},
		{"a number in the list", []any{"a@x.io", 2}, nil, "the value[1] is a number, not a string"},
		{"an empty list", []any{}, nil, "names no one"},
		{"an unknown key", map[string]any{"people": "a@x.io"}, nil, `has "people"`},
		{"groups not strings", map[string]any{"groups": 5}, nil, "groups is a number"},
		{"no one", map[string]any{"users": []any{}}, nil, "names no one"},
	} {
		got, err := AssigneesOf(tc.v)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, got, tc.name)
	}
}

func TestAssigneesIncludes(t *testing.T) {
	t.Parallel()
	a := &Assignees{Users: []string{"ada@example.com"}, Groups: []string{"finance"}}
	require.True(t, a.Includes(&Actor{Email: "Ada@Example.com"}), "emails compare case-insensitively")
	require.True(t, a.Includes(&Actor{Email: "bob@example.com", Groups: []string{"ops", "finance"}}))
	require.False(t, a.Includes(&Actor{Email: "bob@example.com", Groups: []string{"Finance"}}), "group names are exact")
	require.False(t, a.Includes(&Actor{Email: "bob@example.com"}))
	var none *Assignees
	require.True(t, none.Includes(&Actor{Email: "anyone@example.com"}), "unassigned: anyone")
}

func TestUXPeopleOf(t *testing.T) {
	t.Parallel()
	p := UXPeopleOf(&Node{})
	require.Equal(t, 1, p.RequiredApprovals)
	require.Equal(t, RejectAny, p.RejectPolicy)
	require.False(t, p.Assigned())
	p = UXPeopleOf(&Node{Config: json.RawMessage(`{"assignees": "input.owner", "requiredApprovals": 3, "rejectPolicy": "majority", "separationOfDuties": true}`)})
	require.Equal(t, UXPeople{Assignees: json.RawMessage(`"input.owner"`), RequiredApprovals: 3, RejectPolicy: RejectMajority, SeparationOfDuties: true}, p)
	require.True(t, p.Assigned())
	src, ok := p.expression()
	require.True(t, ok)
	require.Equal(t, "input.owner", src)
	require.False(t, UXPeopleOf(&Node{Config: json.RawMessage(`{"assignees": null}`)}).Assigned())
	_, ok = UXPeopleOf(&Node{Config: json.RawMessage(`{"assignees": {"users": ["a@x.io"]}}`)}).expression()
	require.False(t, ok)
}

func TestWithVotes(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	out, err := withVotes(json.RawMessage(`{"x": 1, "decision": {"outcome": "approve"}}`), []Vote{
		{By: "a@x.io", Outcome: "approve", Answer: json.RawMessage(`null`), At: at},
		{By: "b@x.io", Outcome: "approve", Comment: "fine", Answer: json.RawMessage(`{"n": 2}`), At: at}})
	require.NoError(t, err)
	require.JSONEq(t, `{"x": 1, "decision": {"outcome": "approve"}, "decisions": [
		{"by": "a@x.io", "outcome": "approve", "comment": "", "answer": null, "at": "2026-11-25T09:00:00Z"},
		{"by": "b@x.io", "outcome": "approve", "comment": "fine", "answer": {"n": 2}, "at": "2026-11-25T09:00:00Z"}]}`, string(out))
}
