package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stitchd/stitchd/internal/client"
	"github.com/stitchd/stitchd/internal/client/api"
	"github.com/stitchd/stitchd/internal/jsonlimit"
)

// clientSettings bind the flags of the verbs that talk to a running server.
var clientSettings = []setting{
	{"server", "STITCHD_URL"},
	{"token", "STITCHD_AUTH_TOKEN"},
	{"workspace", "STITCHD_WORKSPACE"},
}

type clientOptions struct {
	server, token, workspace string
	json                     bool
}

func addClientFlags(fs *pflag.FlagSet, o *clientOptions) {
	fs.StringVar(&o.server, "server", client.DefaultURL, "URL of the stitchd server (env STITCHD_URL)")
	fs.StringVar(&o.token, "token", "", "API token (env STITCHD_AUTH_TOKEN)")
	fs.StringVar(&o.workspace, "workspace", "", "the workspace to act in (env STITCHD_WORKSPACE; default: default, or a bound token's)")
	fs.BoolVar(&o.json, "json", false, "print the API's JSON answer instead of a summary")
}

func (o *clientOptions) client() *client.Client {
	return &client.Client{BaseURL: o.server, Token: o.token, Workspace: o.workspace}
}

// clientCmd builds a verb that talks to a server: flags, environment, then
// run with a client.
func clientCmd(env envLookup, cmd *cobra.Command, run func(cmd *cobra.Command, c *client.Client, o *clientOptions, args []string) error) *cobra.Command {
	o := &clientOptions{}
	addClientFlags(cmd.Flags(), o)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := applyEnvFrom(cmd.Flags(), env, clientSettings); err != nil {
			return err
		}
		err := run(cmd, o.client(), o, args)
		var ae *client.Error
		if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
			return fmt.Errorf("%w (give --token or set STITCHD_AUTH_TOKEN: the server's admin token, or a personal API token made on the UI's My tokens page)", err)
		}
		return err
	}
	return cmd
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// readArg reads a JSON argument: inline, @file, or - for stdin.
func readArg(cmd *cobra.Command, v, what string) (json.RawMessage, error) {
	var b []byte
	var err error
	switch {
	case v == "-":
		b, err = io.ReadAll(cmd.InOrStdin())
	case strings.HasPrefix(v, "@"):
		b, err = os.ReadFile(v[1:])
	default:
		b = []byte(v)
	}
	if err != nil {
		return nil, fmt.Errorf("error reading %s: %w", what, err)
	}
	var v0 any
	if err := json.Unmarshal(b, &v0); err != nil {
		if line, col, ok := jsonlimit.Position(b, err); ok {
			return nil, fmt.Errorf("%s is not valid JSON: line %d, column %d: %w", what, line, col, err)
		}
		return nil, fmt.Errorf("%s is not valid JSON: %w", what, err)
	}
	return b, nil
}

func newFlowCmd(env envLookup) *cobra.Command {
	flow := &cobra.Command{Use: "flow", Short: "Create, update and list flows on a running server"}
	apply := clientCmd(env, &cobra.Command{
		Use:   "apply FILE",
		Short: "Create the flow named in FILE, or update it (a new version only if the graph changed)",
		Long: "FILE (or - for standard input) is JSON: {\"name\": \"…\", \"graph\": {\"nodes\": […], \"edges\": […]}, \"board_id\"?: \"…\", \"message\"?: \"…\"}.\n" +
			"Prints the flow id and its current version. A graph the compiler refuses prints every problem and exits 1.",
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, c *client.Client, o *clientOptions, args []string) error {
		src := "@" + args[0]
		if args[0] == "-" {
			src = "-"
		}
		raw, err := readArg(cmd, src, args[0])
		if err != nil {
			return err
		}
		var spec client.FlowSpec
		var given struct {
			Graph json.RawMessage `json:"graph"`
		}
		err = json.Unmarshal(raw, &given)
		if err == nil {
			err = json.Unmarshal(raw, &spec)
		}
		if err != nil {
			if line, col, ok := jsonlimit.Position(raw, err); ok {
				return fmt.Errorf("%s: line %d, column %d: %w", args[0], line, col, err)
			}
			return fmt.Errorf("%s: %w", args[0], err)
		}
		if strings.TrimSpace(spec.Name) == "" {
			return fmt.Errorf("%s: name is required", args[0])
		}
		if len(given.Graph) == 0 || string(given.Graph) == "null" {
			return fmt.Errorf("%s: graph is required", args[0])
		}
		f, created, err := c.ApplyFlow(cmd.Context(), spec)
		if err != nil {
			return graphError(cmd.ErrOrStderr(), args[0], err)
		}
		if o.json {
			return printJSON(cmd.OutOrStdout(), f)
		}
		what := "created"
		switch {
		case created:
		case f.VersionCreated != nil && *f.VersionCreated:
			what = "updated"
		default:
			what = "unchanged"
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s\tversion %d\t%s\t%s\n", f.Id, f.Version.Number, what, f.Name)
		for _, w := range f.Warnings {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", problemLine(w))
		}
		return nil
	})
	list := clientCmd(env, &cobra.Command{Use: "list", Short: "List flows", Args: cobra.NoArgs},
		func(cmd *cobra.Command, c *client.Client, o *clientOptions, _ []string) error {
			flows, err := c.ListFlows(cmd.Context())
			if err != nil {
				return err
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), map[string]any{"flows": flows})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tVERSION\tUPDATED")
			for _, f := range flows {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", f.Id, f.Name, f.Version.Number, f.UpdatedAt.Local().Format(time.DateTime))
			}
			return tw.Flush()
		})
	flow.AddCommand(apply, list)
	return flow
}

// problemLine renders a compile problem: where, then what.
func problemLine(p client.Problem) string {
	var where []string
	if p.Path != "" {
		where = append(where, p.Path)
	}
	if p.NodeId != nil && *p.NodeId != "" {
		where = append(where, "node "+*p.NodeId)
	}
	if p.EdgeId != nil && *p.EdgeId != "" {
		where = append(where, "edge "+*p.EdgeId)
	}
	if len(where) == 0 {
		return p.Message
	}
	return strings.Join(where, ", ") + ": " + p.Message
}

// graphError prints every problem of a refused graph.
func graphError(stderr io.Writer, file string, err error) error {
	var ae *client.Error
	if errors.As(err, &ae) && ae.Code == "invalid_graph" {
		fmt.Fprintf(stderr, "%s: %s:\n", file, ae.Message)
		for _, p := range ae.Details {
			fmt.Fprintf(stderr, "  %s\n", problemLine(p))
		}
		return fmt.Errorf("%s was refused: %s", file, ae.Message)
	}
	return err
}

func newRunCmd(env envLookup) *cobra.Command {
	run := &cobra.Command{Use: "run", Short: "Start, inspect and watch runs on a running server"}
	var input, entity string
	start := clientCmd(env, &cobra.Command{
		Use:   "start FLOW",
		Short: "Start a run of FLOW (an id or a name); prints the run id",
		Args:  cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, c *client.Client, o *clientOptions, args []string) error {
		var in json.RawMessage
		if input != "" {
			var err error
			if in, err = readArg(cmd, input, "--input"); err != nil {
				return err
			}
		}
		f, err := c.FindFlow(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		r, err := c.StartRun(cmd.Context(), f.Id.String(), in, entity)
		if err != nil {
			return err
		}
		if o.json {
			return printJSON(cmd.OutOrStdout(), r)
		}
		fmt.Fprintln(cmd.OutOrStdout(), r.Id)
		return nil
	})
	start.Flags().StringVar(&input, "input", "", "the run's input: JSON, @file or - for standard input (default {})")
	start.Flags().StringVar(&entity, "entity", "", "the id of an entity the run carries (on the flow's board)")

	var allNodes bool
	get := clientCmd(env, &cobra.Command{Use: "get ID", Short: "Show a run and its nodes (a fan-out's instances summed up unless --all)",
		Args: cobra.ExactArgs(1)},
		func(cmd *cobra.Command, c *client.Client, o *clientOptions, args []string) error {
			r, err := c.GetRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), r)
			}
			return printRun(cmd.OutOrStdout(), r, allNodes)
		})
	get.Flags().BoolVar(&allNodes, "all", false, "list every instance of a fan-out, not counts by status and the first failures")

	watch := clientCmd(env, &cobra.Command{
		Use:   "watch ID",
		Short: "Follow a run live; exit 0 when it completes, 1 when it fails or is cancelled",
		Args:  cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, c *client.Client, o *clientOptions, args []string) error {
		return watchRun(cmd.Context(), c, args[0], cmd.OutOrStdout(), o.json)
	})
	var lp client.ListRunsParams
	var flowRef string
	list := clientCmd(env, &cobra.Command{Use: "list", Short: "List runs, newest first (--flow, --status, --node, --error, --limit)",
		Args: cobra.NoArgs},
		func(cmd *cobra.Command, c *client.Client, o *clientOptions, _ []string) error {
			p := lp
			// The client leaves a limit below 1 out (the server's page
			// then): --limit 0 or -1 listed 50 runs without a word.
			if p.Limit < 1 || p.Limit > 500 {
				return fmt.Errorf("--limit must be from 1 to 500, not %d", p.Limit)
			}
			if flowRef != "" {
				f, err := c.FindFlow(cmd.Context(), flowRef)
				if err != nil {
					return err
				}
				p.FlowID = f.Id.String()
			}
			runs, err := c.ListRuns(cmd.Context(), p)
			if err != nil {
				return err
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), runs)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tFLOW\tCREATED\tERROR")
			for _, r := range runs {
				e := ""
				if r.Error != nil {
					e = *r.Error
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Id, r.Status, r.FlowId, r.CreatedAt.Format(time.RFC3339), e)
			}
			return tw.Flush()
		})
	lf := list.Flags()
	lf.StringVar(&flowRef, "flow", "", "only runs of this flow (an id or a name)")
	lf.StringVar(&lp.Status, "status", "", "only runs in this status: running, paused, queued, completed, failed, cancelled")
	lf.StringVar(&lp.Node, "node", "", "only runs with a failed node of this id")
	lf.StringVar(&lp.Error, "error", "", "only runs whose failure's text contains this")
	lf.IntVar(&lp.Limit, "limit", 50, "how many runs at most (1–500)")

	var compensate bool
	cancel := clientCmd(env, &cobra.Command{Use: "cancel ID", Short: "Cancel a run (its sub-flow runs too); --compensate runs its undo steps first",
		Args: cobra.ExactArgs(1)},
		func(cmd *cobra.Command, c *client.Client, o *clientOptions, args []string) error {
			r, err := c.CancelRunWith(cmd.Context(), args[0], compensate)
			if err != nil {
				return err
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), r)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "run %s is %s\n", r.Id, r.Status)
			return nil
		})
	cancel.Flags().BoolVar(&compensate, "compensate", false,
		"run the undo nodes of the run's completed steps (in reverse order of completion) before it ends cancelled")
	retry := clientCmd(env, &cobra.Command{Use: "retry ID KEY", Short: "Fire a failed node of a run again, as a new attempt",
		Args: cobra.ExactArgs(2)},
		func(cmd *cobra.Command, c *client.Client, o *clientOptions, args []string) error {
			r, err := c.RetryNode(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), r)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "retried %s; run %s is %s\n", args[1], r.Id, r.Status)
			return nil
		})
	rerun := clientCmd(env, &cobra.Command{Use: "rerun ID KEY", Short: "Run a finished node again, and everything downstream of it",
		Args: cobra.ExactArgs(2)},
		func(cmd *cobra.Command, c *client.Client, o *clientOptions, args []string) error {
			r, err := c.RerunNode(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), r)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "reran %s; run %s is %s\n", args[1], r.Id, r.Status)
			return nil
		})
	run.AddCommand(start, get, watch, list, cancel, retry, rerun)
	return run
}

// newTriggerCmd lists a flow's triggers.
func newTriggerCmd(env envLookup) *cobra.Command {
	trigger := &cobra.Command{Use: "trigger", Short: "A flow's triggers: webhooks, schedules, events, brokers"}
	list := clientCmd(env, &cobra.Command{Use: "list FLOW", Short: "List a flow's triggers (FLOW: an id or a name), oldest first",
		Args: cobra.ExactArgs(1)},
		func(cmd *cobra.Command, c *client.Client, o *clientOptions, args []string) error {
			f, err := c.FindFlow(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			ts, err := c.ListTriggers(cmd.Context(), f.Id.String())
			if err != nil {
				return err
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), ts)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tKIND\tWHAT\tENABLED")
			for _, t := range ts {
				id, what, enabled := triggerWhat(t)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%v\n", id, client.TriggerKind(t), what, enabled)
			}
			return tw.Flush()
		})
	trigger.AddCommand(list)
	return trigger
}

// triggerWhat is a trigger's id, what sets it off (by kind) and whether
// it is enabled (a webhook always is).
func triggerWhat(t client.Trigger) (id, what string, enabled bool) {
	switch client.TriggerKind(t) {
	case "webhook":
		w, err := t.AsWebhookTrigger()
		if err != nil {
			return "", "", false
		}
		return w.Id.String(), "POST /hooks/" + w.Slug, true
	case "schedule":
		sc, err := t.AsScheduleTrigger()
		if err != nil {
			return "", "", false
		}
		what = sc.Cron
		if sc.Timezone != "" {
			what += " (" + sc.Timezone + ")"
		}
		return sc.Id.String(), what, sc.Enabled
	case "event":
		e, err := t.AsEventTrigger()
		if err != nil {
			return "", "", false
		}
		return e.Id.String(), "event " + e.Name, e.Enabled
	default:
		b, err := t.AsBrokerTrigger()
		if err != nil {
			return "", "", false
		}
		for _, v := range []*string{b.Subject, b.Queue, b.Name} {
			if v != nil && *v != "" {
				return b.Id.String(), *v, b.Enabled
			}
		}
		return b.Id.String(), "", b.Enabled
	}
}

// newApprovalsCmd lists the steps waiting for a person.
func newApprovalsCmd(env envLookup) *cobra.Command {
	approvals := &cobra.Command{Use: "approvals", Short: "The steps waiting for a person"}
	var assigned string
	list := clientCmd(env, &cobra.Command{Use: "list", Short: "List the steps waiting for a person, oldest first (--assigned me|groups|all)",
		Args: cobra.NoArgs},
		func(cmd *cobra.Command, c *client.Client, o *clientOptions, _ []string) error {
			as, err := c.ListApprovals(cmd.Context(), assigned)
			if err != nil {
				return err
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), as)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tKEY\tLABEL\tOUTCOMES\tWAITING SINCE\tASSIGNED TO\tVOTES")
			for _, a := range as {
				who := "anyone"
				if a.Assignees != nil {
					who = strings.Join(append(append([]string{}, a.Assignees.Users...), prefixed("@", a.Assignees.Groups)...), ",")
				}
				votes := ""
				if a.RequiredApprovals != nil && *a.RequiredApprovals > 1 {
					n := 0
					if a.Votes != nil {
						n = len(*a.Votes)
					}
					votes = fmt.Sprintf("%d/%d", n, *a.RequiredApprovals)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.RunId, a.Key, a.Label, strings.Join(a.Outcomes, "|"),
					a.WaitingSince.Format(time.RFC3339), who, votes)
			}
			return tw.Flush()
		})
	list.Flags().StringVar(&assigned, "assigned", "", "me (yours and unassigned), groups (your groups') or all")
	approvals.AddCommand(list)
	return approvals
}

func prefixed(p string, xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = p + x
	}
	return out
}

func printRun(w io.Writer, r *client.Run, all bool) error {
	fmt.Fprintf(w, "run      %s\nflow     %s\nstatus   %s\n", r.Id, r.FlowId, r.Status)
	if r.Error != nil {
		fmt.Fprintf(w, "error    %s\n", *r.Error)
	}
	fmt.Fprintf(w, "input    %s\n", compact(r.Input))
	if client.Finished(r) {
		fmt.Fprintf(w, "output   %s\n", compact(r.Output))
	}
	var nodes map[string]client.Node
	if r.Nodes != nil {
		nodes = *r.Nodes
	}
	keys := make([]string, 0, len(nodes))
	for k := range nodes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := nodes[keys[i]], nodes[keys[j]]
		if (a.StartedAt == nil) != (b.StartedAt == nil) {
			return a.StartedAt != nil
		}
		if a.StartedAt != nil && !a.StartedAt.Equal(*b.StartedAt) {
			return a.StartedAt.Before(*b.StartedAt)
		}
		return keys[i] < keys[j]
	})
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nNODE\tTYPE\tSTATUS\tATTEMPT\tERROR")
	// A fan-out's instances (keys of one node id with an index) are one
	// line each with --all, else one line for the node: counts by status,
	// then its first failures.
	fanned := map[string][]*client.Node{}
	if !all {
		for _, k := range keys {
			if n := nodes[k]; len(n.Index) > 0 {
				fanned[n.NodeId] = append(fanned[n.NodeId], &n)
			}
		}
	}
	done := map[string]bool{}
	for _, k := range keys {
		n := nodes[k]
		if insts := fanned[n.NodeId]; len(n.Index) > 0 && insts != nil {
			if !done[n.NodeId] {
				done[n.NodeId] = true
				printFanOut(tw, n.NodeId, insts)
			}
			continue
		}
		e := ""
		if n.Error != nil {
			e = *n.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", k, n.Type, n.Status, n.Attempt, e)
	}
	return tw.Flush()
}

// maxFailuresShown is how many of a fan-out's failed instances run get
// names without --all.
const maxFailuresShown = 3

// printFanOut writes a fan-out node's line: its instances' count by status
// and its first failed instances, in index order.
func printFanOut(w io.Writer, nodeID string, insts []*client.Node) {
	sort.Slice(insts, func(i, j int) bool { return slices.Compare(insts[i].Index, insts[j].Index) < 0 })
	counts := map[string]int{}
	var failed []*client.Node
	for _, n := range insts {
		counts[string(n.Status)]++
		if n.Status == "failed" {
			failed = append(failed, n)
		}
	}
	statuses := make([]string, 0, len(counts))
	for st := range counts {
		statuses = append(statuses, st)
	}
	sort.Strings(statuses)
	parts := make([]string, len(statuses))
	for i, st := range statuses {
		parts[i] = fmt.Sprintf("%s %d", st, counts[st])
	}
	fmt.Fprintf(w, "%s ×%d\t%s\t%s\t\t\n", nodeID, len(insts), insts[0].Type, strings.Join(parts, ", "))
	for i, n := range failed {
		if i == maxFailuresShown {
			fmt.Fprintf(w, "  … %d more failed (--all lists them)\t\t\t\t\n", len(failed)-maxFailuresShown)
			break
		}
		e := ""
		if n.Error != nil {
			e = *n.Error
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%d\t%s\n", n.Key, n.Type, n.Status, n.Attempt, e)
	}
}

// compact is a JSON value on one line, cut at 300 bytes.
func compact(v any) string {
	out, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(out)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// errRunNotCompleted is returned by watch for a failed or cancelled run.
type errRunNotCompleted struct{ id, status, reason string }

func (e *errRunNotCompleted) Error() string {
	if e.reason != "" {
		return fmt.Sprintf("run %s %s: %s", e.id, e.status, e.reason)
	}
	return fmt.Sprintf("run %s %s", e.id, e.status)
}

// watchRun prints a run's events as they happen until it finishes.
func watchRun(ctx context.Context, c *client.Client, id string, w io.Writer, asJSON bool) error {
	var end error
	sections := sectionNames{c: c, ctx: ctx}
	err := c.RunEvents(ctx, id, 0, func(e client.Event) error {
		if asJSON {
			b, _ := json.Marshal(e)
			fmt.Fprintln(w, string(b))
		} else if line := eventLine(id, e, sections.name); line != "" {
			fmt.Fprintf(w, "%s  %s\n", e.CreatedAt.Local().Format("15:04:05.000"), line)
		}
		switch e.Type {
		case "run.completed":
			r, err := c.GetRun(ctx, id)
			if err != nil {
				return err
			}
			if !asJSON {
				fmt.Fprintf(w, "output: %s\n", compact(r.Output))
			}
			return client.ErrStop
		case "run.failed", "run.cancelled":
			p, _ := e.Payload.(map[string]any)
			reason, _ := p["error"].(string)
			end = &errRunNotCompleted{id: id, status: strings.TrimPrefix(e.Type, "run."), reason: reason}
			return client.ErrStop
		}
		return nil
	})
	if err != nil {
		return err
	}
	return end
}

// sectionNames names a board's sections for run watch, reading each board
// once.
type sectionNames struct {
	c      *client.Client
	ctx    context.Context
	boards map[string]map[string]string // board → section id → name
}

// name is the section's name, or its id when the board cannot be read.
func (s *sectionNames) name(boardID, sectionID string) string {
	if s.boards == nil {
		s.boards = map[string]map[string]string{}
	}
	names, ok := s.boards[boardID]
	if !ok {
		var b api.Board
		names = map[string]string{}
		if s.c.Do(s.ctx, http.MethodGet, "/api/v1/boards/"+url.PathEscape(boardID)+"?limit=1", nil, &b) == nil {
			for _, sec := range b.Sections {
				names[sec.Id] = sec.Name
			}
		}
		s.boards[boardID] = names
	}
	if n := names[sectionID]; n != "" {
		return n
	}
	return sectionID
}

// eventLine renders an event for a person ("" = not worth a line);
// compensationNote says how a run's compensation ended, from its
// run.failed or run.cancelled payload.
func compensationNote(p map[string]any) string {
	if p["compensated"] == true {
		return " (compensated)"
	}
	if f, ok := p["compensation_failed"].(string); ok && f != "" {
		return " (compensation stopped: " + f + " failed)"
	}
	return ""
}

// section names a board's section.
func eventLine(runID string, e client.Event, section func(boardID, sectionID string) string) string {
	p, _ := e.Payload.(map[string]any)
	key := ""
	if e.Key != nil {
		key = *e.Key
	}
	str := func(k string) string {
		if v, ok := p[k]; ok && v != nil {
			return fmt.Sprint(v)
		}
		return ""
	}
	switch e.Type {
	case "run.started":
		return "run started"
	case "run.completed":
		return "run completed"
	case "run.failed":
		return "run failed: " + str("error") + compensationNote(p)
	case "run.cancelled":
		return "run cancelled" + compensationNote(p)
	case "run.compensating":
		steps, _ := p["steps"].([]any)
		return fmt.Sprintf("run compensating: %d completed step(s) to undo, the last completed first", len(steps))
	case "node.compensated":
		return fmt.Sprintf("%-16s undone by %s", key, str("undo"))
	case "node.joined":
		return fmt.Sprintf("%-16s fired on the first arrival (%s)", key, str("arrival"))
	case "run.responded":
		return fmt.Sprintf("%-16s answered the caller %s", key, str("status"))
	case "run.resumed":
		return "run resumed"
	case "node.status":
		s := str("status")
		line := fmt.Sprintf("%-16s %s", key, s)
		switch s {
		case "running":
			if a := str("attempt"); a != "" && a != "1" {
				line += " (attempt " + a + ")"
			}
		case "failed":
			line += ": " + str("error")
		case "waiting_for_user":
			line += fmt.Sprintf(" — approve with: stitchd approve %s %s", runID, key)
		}
		return line
	case "node.fanout":
		return fmt.Sprintf("%-16s split into %s items", key, str("items"))
	case "node.heartbeat":
		return fmt.Sprintf("%-16s heartbeat", key)
	case "dispatch.attempt":
		if p["delivered"] == true {
			return ""
		}
		line := fmt.Sprintf("%-16s delivery failed: %s", key, str("error"))
		if r := str("retry_in_ms"); r != "" {
			line += " (retrying in " + r + " ms)"
		}
		return line
	case "entity.moved":
		if to := str("to_section_id"); to != "" {
			return fmt.Sprintf("%-16s entity moved to %s", key, section(str("board_id"), to))
		}
		return ""
	case "callback.rejected":
		return fmt.Sprintf("%-16s callback rejected", key)
	}
	return fmt.Sprintf("%-16s %s", key, e.Type)
}

func newApproveCmd(env envLookup) *cobra.Command {
	var output, reject, outcome, comment string
	cmd := clientCmd(env, &cobra.Command{
		Use:   "approve RUN KEY",
		Short: "Answer a UX node waiting for a person: approve it (with --output), choose an --outcome, or reject it (--reject REASON)",
		Args:  cobra.ExactArgs(2),
	}, func(cmd *cobra.Command, c *client.Client, o *clientOptions, args []string) error {
		p := client.CompleteParams{Outcome: outcome, Comment: comment, Reject: reject}
		if reject != "" && (output != "" || outcome != "") {
			return errors.New("--reject excludes --output and --outcome")
		}
		if output != "" {
			var err error
			if p.Output, err = readArg(cmd, output, "--output"); err != nil {
				return err
			}
		}
		r, err := c.CompleteNode(cmd.Context(), args[0], args[1], p)
		if err != nil {
			return err
		}
		if o.json {
			return printJSON(cmd.OutOrStdout(), r)
		}
		verb := "approved"
		switch {
		case reject != "":
			verb = "rejected"
		case outcome != "":
			verb = "answered " + outcome + ":"
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s %s; run %s is %s\n", verb, args[1], r.Id, r.Status)
		return nil
	})
	cmd.Flags().StringVar(&output, "output", "", `the person's answer: JSON, @file or - (default {"approved": true} when approving)`)
	cmd.Flags().StringVar(&outcome, "outcome", "", "the outcome chosen, one of the node's outcomes (default approve)")
	cmd.Flags().StringVar(&comment, "comment", "", "a comment kept in the decision")
	cmd.Flags().StringVar(&reject, "reject", "", "reject with this reason (the reject edge, else the node fails)")
	return cmd
}

func newWebhookSecretCmd(env envLookup) *cobra.Command {
	cmd := clientCmd(env, &cobra.Command{
		Use:   "webhook-secret",
		Short: "Print the secret workers verify dispatch signatures with (whsec_…)",
		Args:  cobra.NoArgs,
	}, func(cmd *cobra.Command, c *client.Client, o *clientOptions, _ []string) error {
		s, err := c.WebhookSecret(cmd.Context())
		if err != nil {
			return err
		}
		if o.json {
			return printJSON(cmd.OutOrStdout(), map[string]string{"secret": s})
		}
		fmt.Fprintln(cmd.OutOrStdout(), s)
		return nil
	})
	var flow string
	var grace time.Duration
	rotate := clientCmd(env, &cobra.Command{
		Use:   "rotate",
		Short: "Rotate the secret that signs dispatches; the old one signs beside it for --grace",
		Args:  cobra.NoArgs,
	}, func(cmd *cobra.Command, c *client.Client, o *clientOptions, _ []string) error {
		r, err := c.RotateWebhookSecret(cmd.Context(), flow, grace)
		if err != nil {
			return err
		}
		if o.json {
			return printJSON(cmd.OutOrStdout(), r)
		}
		fmt.Fprintln(cmd.OutOrStdout(), r.Secret)
		if r.PreviousSecretExpiresAt != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "the old secret signs too until %s\n", r.PreviousSecretExpiresAt.Format(time.RFC3339))
		}
		return nil
	})
	rotate.Flags().StringVar(&flow, "flow", "", "rotate this flow's own secret (giving it one) instead of the server's")
	rotate.Flags().DurationVar(&grace, "grace", 24*time.Hour, "how long the old secret goes on signing (0 to 168h)")
	cmd.AddCommand(rotate)
	return cmd
}

func newSecretCmd(env envLookup) *cobra.Command {
	secret := &cobra.Command{Use: "secret", Short: "Set, list and delete the named secrets HTTP nodes use ({{ secret \"NAME\" }})"}
	set := clientCmd(env, &cobra.Command{
		Use:   "set NAME",
		Short: "Create or replace a secret; its value is read from standard input",
		Long: "Reads the value from standard input (never an argument: arguments are in every process listing);\n" +
			"one trailing newline is dropped, so `echo $TOKEN | stitchd secret set API_TOKEN` stores $TOKEN.\n" +
			"The server must have STITCHD_SECRET_KEY (docs/configuration.md).",
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, c *client.Client, o *clientOptions, args []string) error {
		b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 1<<20))
		if err != nil {
			return fmt.Errorf("error reading the secret's value: %w", err)
		}
		value := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if value == "" {
			return errors.New("no value on standard input (pipe the value in: echo \"$TOKEN\" | stitchd secret set NAME)")
		}
		info, err := c.SetSecret(cmd.Context(), args[0], value)
		if err != nil {
			return err
		}
		if o.json {
			return printJSON(cmd.OutOrStdout(), info)
		}
		fmt.Fprintln(cmd.OutOrStdout(), info.Name)
		return nil
	})
	list := clientCmd(env, &cobra.Command{
		Use:   "list",
		Short: "List the secrets: names and times, never values",
		Args:  cobra.NoArgs,
	}, func(cmd *cobra.Command, c *client.Client, o *clientOptions, _ []string) error {
		ss, err := c.ListSecrets(cmd.Context())
		if err != nil {
			return err
		}
		if o.json {
			return printJSON(cmd.OutOrStdout(), map[string]any{"secrets": ss})
		}
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tUPDATED\tBY")
		for _, s := range ss {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.UpdatedAt.UTC().Format(time.RFC3339), s.UpdatedBy)
		}
		return tw.Flush()
	})
	del := clientCmd(env, &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a secret (nodes using it fail when they next send their request)",
		Args:  cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, c *client.Client, _ *clientOptions, args []string) error {
		return c.DeleteSecret(cmd.Context(), args[0])
	})
	secret.AddCommand(set, list, del)
	return secret
}

// newWorkspaceCmd is `stitchd workspace list`: the workspaces the caller
// belongs to (--workspace on the other verbs chooses one).
func newWorkspaceCmd(env envLookup) *cobra.Command {
	ws := &cobra.Command{Use: "workspace", Short: "Workspaces (docs/workspaces.md)"}
	list := clientCmd(env, &cobra.Command{Use: "list", Short: "List the workspaces you belong to, with your role in each", Args: cobra.NoArgs},
		func(cmd *cobra.Command, c *client.Client, o *clientOptions, _ []string) error {
			spaces, err := c.Workspaces(cmd.Context())
			if err != nil {
				return err
			}
			if o.json {
				return printJSON(cmd.OutOrStdout(), map[string]any{"workspaces": spaces})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SLUG\tNAME\tROLE")
			for _, w := range spaces {
				role := ""
				if w.Role != nil {
					role = *w.Role
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", w.Slug, w.Name, role)
			}
			return tw.Flush()
		})
	ws.AddCommand(list)
	return ws
}
