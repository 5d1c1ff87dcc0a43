package compiler_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/compiler"
)

// uxPeople is a UX node with people settings (JSON members).
func uxPeople(id, members string) compiler.VisualNode {
	return node(id, "UX", `{"prompt": "OK?", `+members+`}`)
}

func TestCompileAssigneesGood(t *testing.T) {
	t.Parallel()
	eg := compileOK(t, graph(nodes(
		uxPeople("static", `"assignees": {"users": ["Ada@Example.com", "bob@example.com"], "groups": ["finance"]}, "requiredApprovals": 2, "rejectPolicy": "majority", "separationOfDuties": true`),
		uxPeople("users", `"assignees": {"users": ["ada@example.com", "bob@example.com"]}, "requiredApprovals": 2`),
		uxPeople("groups", `"assignees": {"groups": ["ops"]}, "requiredApprovals": 5, "rejectPolicy": "any"`),
		uxPeople("expr", `"assignees": "input.owner_email"`),
		uxPeople("exprmap", `"assignees": "{\"users\": [input.owner], \"groups\": entity.metadata.teams}"`),
		uxPeople("nulls", `"assignees": null, "requiredApprovals": null, "separationOfDuties": false`),
	), chain("e", "static", "users", "groups", "expr", "exprmap", "nulls")), compiler.Options{})
	require.Contains(t, string(eg.Nodes["static"].Config), `"requiredApprovals":2`)
}

func TestCompileAssigneesProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, members string
		code, path    string
		msg           string
	}{
		{"a number", `"assignees": 3`, compiler.CodeInvalidConfig, "nodes[1].data.assignees", "or an expression string"},
		{"a list", `"assignees": ["ada@example.com"]`, compiler.CodeInvalidConfig, "nodes[1].data.assignees", "or an expression string"},
		{"an empty expression", `"assignees": " "`, compiler.CodeInvalidExpression, "nodes[1].data.assignees", "empty string"},
		{"a bad expression", `"assignees": "input.owner +"`, compiler.CodeInvalidExpression, "nodes[1].data.assignees", "assignees:"},
		{"an unknown name", `"assignees": "output.owner"`, compiler.CodeInvalidExpression, "nodes[1].data.assignees", "unknown name output"},
		{"no one", `"assignees": {"users": [], "groups": []}`, compiler.CodeInvalidConfig, "nodes[1].data.assignees", "names no one"},
		{"an unknown key", `"assignees": {"people": ["a@b.c"]}`, compiler.CodeInvalidConfig, "nodes[1].data.assignees.people", "only users and groups"},
		{"users not a list", `"assignees": {"users": "a@b.c"}`, compiler.CodeInvalidConfig, "nodes[1].data.assignees.users", "list of strings"},
		{"not an email", `"assignees": {"users": ["ada"]}`, compiler.CodeInvalidConfig, `nodes[1].data.assignees.users["0"]`, "not an email"},
		{"a number among users", `"assignees": {"users": ["a@b.c", 7]}`, compiler.CodeInvalidConfig, `nodes[1].data.assignees.users["1"]`, "must be strings"},
		{"an empty group", `"assignees": {"groups": [""]}`, compiler.CodeInvalidConfig, `nodes[1].data.assignees.groups["0"]`, "not a group name"},
		{"zero approvals", `"requiredApprovals": 0`, compiler.CodeInvalidConfig, "nodes[1].data.requiredApprovals", "from 1 to"},
		{"a fraction", `"requiredApprovals": 1.5`, compiler.CodeInvalidConfig, "nodes[1].data.requiredApprovals", "from 1 to"},
		{"a string", `"requiredApprovals": "2"`, compiler.CodeInvalidConfig, "nodes[1].data.requiredApprovals", "from 1 to"},
		{"more than the users", `"assignees": {"users": ["a@b.c", "A@B.C", "d@e.f"]}, "requiredApprovals": 3`, compiler.CodeInvalidConfig, "nodes[1].data.requiredApprovals", "more than its 2 assigned users"},
		{"a bad policy", `"rejectPolicy": "all"`, compiler.CodeInvalidConfig, "nodes[1].data.rejectPolicy", `"any"`},
		{"a string for a boolean", `"separationOfDuties": "yes"`, compiler.CodeInvalidConfig, "nodes[1].data.separationOfDuties", "true or false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ps := compileErr(t, graph(nodes(worker("a"), uxPeople("ask", tc.members)), chain("e", "a", "ask")), compiler.Options{})
			require.Equal(t, []prob{{tc.code, "ask", "", tc.path}}, strip(ps))
			require.Contains(t, ps[0].Message, tc.msg)
		})
	}
}
