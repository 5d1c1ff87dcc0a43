package demo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/stitchd/stitchd/handlers"
	"strings"

	"github.com/google/uuid"

	"github.com/stitchd/stitchd/compiler"
	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/store"
)

// Names of what Load creates.
const (
	BoardName   = "Lead qualification"
	FlowName    = "Lead qualification"
	TriggerSlug = "lead"
	// DefaultWorkerURL is where `stitchd worker demo` listens by default.
	DefaultWorkerURL = "http://127.0.0.1:8090"
)

// Sections of the demo board, in order.
var Sections = []store.Section{
	{ID: "new", Name: "New"},
	{ID: "enriched", Name: "Enriched"},
	{ID: "qualified", Name: "Qualified"},
	{ID: "customers", Name: "Customers"},
	{ID: "nurture", Name: "Nurture"},
}

// Options configures Load.
type Options struct {
	// WorkerURL is the demo worker's base URL (default DefaultWorkerURL).
	WorkerURL string
}

// Loaded tells what Load found or made.
type Loaded struct {
	BoardID   string
	FlowID    string
	VersionID string
	// Created lists what this call created ("board", "flow", "flow
	// version", "trigger"); empty when everything was already there.
	Created []string
	// Warnings are problems that did not stop the load.
	Warnings []string
}

// Load makes sure the demo board, flow and trigger exist: a board named
// BoardName, a flow named FlowName on it whose current graph is Graph, and
// the trigger POST /hooks/lead. Calling it again creates nothing new; a
// demo flow still at a version the demo made follows the demo's graph (a
// new worker address is a new version), one a person saved since is left
// as it is (with a warning). Processes sharing the database load
// it one at a time.
func Load(ctx context.Context, st *store.Store, o Options) (*Loaded, error) {
	if o.WorkerURL == "" {
		o.WorkerURL = DefaultWorkerURL
	}
	var out *Loaded
	err := st.WithLock(ctx, "stitchd demo", func(ctx context.Context, tx *store.Store) error {
		var err error
		out, err = load(ctx, tx, strings.TrimRight(o.WorkerURL, "/"))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error loading the demo: %w", err)
	}
	return out, nil
}

func load(ctx context.Context, st *store.Store, workerURL string) (*Loaded, error) {
	out := &Loaded{Created: []string{}}
	board, err := ensureBoard(ctx, st, out)
	if err != nil {
		return nil, err
	}
	out.BoardID = board.ID
	ids := make([]string, len(board.Sections))
	for i, s := range board.Sections {
		ids[i] = s.ID
	}
	v, err := compileVersion(Graph(workerURL), ids)
	if err != nil {
		return nil, err
	}
	flows, err := st.ListFlows(ctx, "")
	if err != nil {
		return nil, err
	}
	var flow *store.Flow
	for i := range flows {
		if flows[i].Name == FlowName {
			flow = &flows[i]
			break
		}
	}
	if flow == nil {
		flow, err = st.CreateFlow(ctx, "", uuid.NewString(), FlowName, &board.ID, *v)
		if err != nil {
			return nil, err
		}
		out.Created = append(out.Created, "flow")
	} else if cur, err := st.GetVersion(ctx, flow.ID, flow.VersionNumber); err != nil {
		return nil, err
	} else if cur.Message != v.Message {
		// Someone saved the demo flow since the demo did: their edit stays.
		out.Warnings = append(out.Warnings, fmt.Sprintf("the %q flow was edited (version %d): left as it is, not reset to the demo's graph",
			FlowName, flow.VersionNumber))
	} else {
		p := store.UpdateFlowParams{Version: v}
		if flow.BoardID == nil || *flow.BoardID != board.ID {
			p.BoardID = &board.ID
		}
		var created bool
		flow, created, err = st.UpdateFlow(ctx, flow.ID, p)
		if err != nil {
			return nil, err
		}
		if created {
			out.Created = append(out.Created, "flow version")
		}
	}
	out.FlowID, out.VersionID = flow.ID, flow.VersionID
	if err := ensureTrigger(ctx, st, flow.ID, board.ID, out); err != nil {
		return nil, err
	}
	return out, nil
}

func ensureBoard(ctx context.Context, st *store.Store, out *Loaded) (*store.Board, error) {
	boards, err := st.ListBoards(ctx, "")
	if err != nil {
		return nil, err
	}
	for i := range boards {
		if boards[i].Name == BoardName {
			return &boards[i], nil
		}
	}
	b, err := st.CreateBoard(ctx, "", uuid.NewString(), BoardName, Sections)
	if err != nil {
		return nil, err
	}
	out.Created = append(out.Created, "board")
	return b, nil
}

// TriggerEntity is the entity mapping of the demo trigger: a lead upserted
// by email from the body.
func TriggerEntity(boardID string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"board_id": boardID, "type": "lead", "name_path": "name", "email_path": "email"})
	return b
}

// TriggerInputSchema is what the demo trigger's bodies must hold: a lead
// with a name and an email (a body without them would make a card with
// neither), and contacts as a list when given.
var TriggerInputSchema = json.RawMessage(`{"type": "object", "required": ["name", "email"],
	"properties": {"name": {"type": "string", "minLength": 1}, "email": {"type": "string", "format": "email"},
		"contacts": {"type": "array", "items": {"type": "object"}}}}`)

func ensureTrigger(ctx context.Context, st *store.Store, flowID, boardID string, out *Loaded) error {
	t, err := st.TriggerBySlug(ctx, TriggerSlug)
	switch {
	case err == nil && t.FlowID == flowID:
		return nil
	case err == nil:
		out.Warnings = append(out.Warnings, fmt.Sprintf("POST /hooks/%s already starts flow %s; the demo flow has no trigger",
			TriggerSlug, t.FlowID))
		return nil
	case !errors.Is(err, engine.ErrNotFound):
		return err
	}
	// Missing, or left behind by a deleted flow: (re)point it at the demo.
	if err := st.ClaimTrigger(ctx, store.Trigger{ID: uuid.NewString(), FlowID: flowID, Slug: TriggerSlug,
		Entity: TriggerEntity(boardID), InputSchema: TriggerInputSchema}); err != nil {
		return err
	}
	out.Created = append(out.Created, "trigger")
	return nil
}

// compileVersion compiles a graph as the API does when a flow is saved.
func compileVersion(raw json.RawMessage, sections []string) (*store.NewVersion, error) {
	v, err := compiler.ParseVisual(raw)
	if err != nil {
		return nil, fmt.Errorf("error parsing the demo graph: %w", err)
	}
	g, err := compiler.CompileWithOptions(v, compiler.Options{BoardSections: sections, Types: handlers.Types(handlers.Options{})})
	if err != nil {
		return nil, fmt.Errorf("error compiling the demo graph (was the %q board changed?): %w", BoardName, err)
	}
	canon, err := compiler.Canonical(raw)
	if err != nil {
		return nil, fmt.Errorf("error canonicalising the demo graph: %w", err)
	}
	exec, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(canon)
	return &store.NewVersion{ID: uuid.NewString(), Graph: canon, Execution: exec, Hash: hex.EncodeToString(sum[:]),
		Message: "stitchd demo"}, nil
}
