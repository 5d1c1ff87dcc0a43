package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// EventFailureTolerated is logged when a failed item counts as arrived at
// its Collector, within the Collector's toleratedFailures.
const EventFailureTolerated = "node.failure_tolerated"

// Tolerance is a Collector's toleratedFailures: how many of its items may
// fail, as a count or a percent of the items, with the Collector still
// firing (null at each failed index, the failures listed in errors).
type Tolerance struct {
	Count   int
	Percent float64
	// IsPercent: Percent applies, not Count.
	IsPercent bool
}

// ParseTolerance reads a toleratedFailures value: an integer ≥ 0 or a
// percent string from "0%" to "100%" ("2.5%" allowed).
func ParseTolerance(r gjson.Result) (Tolerance, error) {
	switch r.Type {
	case gjson.Number:
		f, err := strconv.ParseFloat(r.Raw, 64)
		if err != nil || f != math.Trunc(f) || f < 0 || f > 1<<31 {
			return Tolerance{}, fmt.Errorf("must be an integer count of items (0 or more) or a percent string such as \"5%%\", got %s", r.Raw)
		}
		return Tolerance{Count: int(f)}, nil
	case gjson.String:
		num, ok := strings.CutSuffix(strings.TrimSpace(r.Str), "%")
		f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if !ok || err != nil || math.IsNaN(f) || f < 0 || f > 100 {
			return Tolerance{}, fmt.Errorf("must be a percent from \"0%%\" to \"100%%\" or an integer count, got %s", r.Raw)
		}
		return Tolerance{Percent: f, IsPercent: true}, nil
	default: // null, a boolean, an object or an array: refused below
	}
	return Tolerance{}, errors.New("must be an integer count of items (0 or more) or a percent string such as \"5%\", got " + r.Raw)
}

// Limit is the number of failed items tolerated among items.
func (tl Tolerance) Limit(items int) int {
	if !tl.IsPercent {
		return tl.Count
	}
	// A hair of slack so that 5% of 1000 is 50, not 49.99….
	return int(math.Floor(float64(items)*tl.Percent/100 + 1e-9))
}

// toleranceOf returns a Collector's toleratedFailures, when it has one.
func toleranceOf(n *Node) (Tolerance, bool) {
	if n == nil || !n.Caps.Collects {
		return Tolerance{}, false
	}
	r := gjson.GetBytes(n.Config, "toleratedFailures")
	if !r.Exists() || r.Type == gjson.Null {
		return Tolerance{}, false
	}
	tl, err := ParseTolerance(r)
	return tl, err == nil
}

// tolerate counts failed node st, an item of the region closed by
// Collector coll (at cidx), as arrived at the Collector when the
// Collector's toleratedFailures allows: it reports whether it did (false:
// the Collector fails as without a tolerance). The items the failure keeps
// from arriving are counted down from the Collector's pending count, and
// that number is kept on the failed row (as a negative pending count) so
// that a retry of the node gives it back (untolerate). When the failure is
// one too many, beyond says so, for the Collector's error.
func (t *txn) tolerate(region *Region, coll *Node, cidx []int, st *NodeState, msg string, tl Tolerance) (tolerated bool, beyond string, err error) {
	collKey := InstanceKey(coll.ID, cidx)
	keys := make([]string, 0, len(region.Direct)+1)
	for _, m := range region.Direct {
		keys = append(keys, InstanceKey(m, st.Index))
	}
	keys = append(keys, collKey)
	states, err := t.tx.NodeStates(t.ctx, t.run.ID, keys)
	if err != nil {
		return false, "", fmt.Errorf("error loading item %s of %s: %w", st.Key, collKey, err)
	}
	if cs := states[collKey]; cs == nil || cs.Status != StatusPending {
		return false, "", nil // failed already, or fired: as without a tolerance
	}
	failedNodes := map[string]bool{}
	for _, m := range region.Direct {
		if s := states[InstanceKey(m, st.Index)]; s != nil && s.Status == StatusFailed && s.Taken == nil {
			failedNodes[m] = true
		}
	}
	failedNodes[st.NodeID] = true
	if len(failedNodes) == 1 {
		// The item's first failure: within the tolerance?
		items, failedItems, err := t.tx.ItemTally(t.ctx, t.run.ID, region.Direct, cidx)
		if err != nil {
			return false, "", fmt.Errorf("error counting the failed items of %s: %w", collKey, err)
		}
		if limit := tl.Limit(items); failedItems > limit {
			return false, fmt.Sprintf(" (%d of %d items failed, more than the %d tolerated)", failedItems, items, limit), nil
		}
	}
	credit := t.blockedUps(coll, region, st.Index, states, failedNodes) -
		t.blockedUps(coll, region, st.Index, states, without(failedNodes, st.NodeID))
	if credit > 0 {
		if err := t.w.SetPending(t.run.ID, st.Key, -credit); err != nil {
			return false, "", fmt.Errorf("error marking %s tolerated: %w", st.Key, err)
		}
		for range credit {
			t.arrivals = append(t.arrivals, target{node: coll, idx: cidx, key: collKey})
		}
	}
	t.event(EventFailureTolerated, st.Key, map[string]any{"collector": collKey, "index": st.Index[len(st.Index)-1],
		"error": msg})
	return true, "", nil
}

func without(m map[string]bool, k string) map[string]bool {
	out := make(map[string]bool, len(m))
	for x := range m {
		if x != k {
			out[x] = true
		}
	}
	return out
}

// blockedUps counts the Collector's upstream nodes whose instance at idx
// can no longer arrive because of the failed nodes: a failed one, or one
// not completed with a failed node on its way in the region.
func (t *txn) blockedUps(coll *Node, region *Region, idx []int, states map[string]*NodeState, failedNodes map[string]bool) int {
	direct := make(map[string]bool, len(region.Direct))
	for _, m := range region.Direct {
		direct[m] = true
	}
	memo := map[string]bool{}
	var blocked func(id string) bool
	blocked = func(id string) bool {
		if b, ok := memo[id]; ok {
			return b
		}
		memo[id] = false
		b := failedNodes[id]
		if !b {
			if s := states[InstanceKey(id, idx)]; s == nil || (s.Status != StatusCompleted && s.Status != StatusSkipped) {
				for _, u := range t.graph.Upstream[id] {
					if direct[u] && blocked(u) {
						b = true
						break
					}
				}
			}
		}
		memo[id] = b
		return b
	}
	n := 0
	for _, u := range t.graph.Upstream[coll.ID] {
		if direct[u] && blocked(u) {
			n++
		}
	}
	return n
}

// untolerate gives back the count a tolerated failure took from its
// Collector (tolerate) when the failed node is retried, so that its
// arrival is counted once.
func (t *txn) untolerate(cur *NodeState) error {
	if cur.PendingParents >= 0 {
		return nil
	}
	n := t.graph.Nodes[cur.NodeID]
	if n == nil || n.Region == "" || len(cur.Index) == 0 {
		return nil
	}
	region := t.graph.Regions[n.Region]
	if region == nil {
		return nil
	}
	collKey := InstanceKey(region.Collector, cur.Index[:len(cur.Index)-1])
	if _, err := t.w.AddPending(t.run.ID, []string{collKey}, -cur.PendingParents); err != nil {
		return fmt.Errorf("error counting %s back into %s: %w", cur.Key, collKey, err)
	}
	if err := t.w.SetPending(t.run.ID, cur.Key, 0); err != nil {
		return fmt.Errorf("error clearing the tolerance mark of %s: %w", cur.Key, err)
	}
	return nil
}

// toleratedOutput turns a Collector's array of items into its output under
// toleratedFailures: {"items": [...], "errors": [{index, key, error}]},
// null at each failed index. ok is false when more items failed than
// tolerated (the Collector then fails with msg).
func (t *txn) toleratedOutput(c *Node, idx []int, arr json.RawMessage, tl Tolerance) (out json.RawMessage, msg string, ok bool, err error) {
	region := t.regionOf(c)
	var items []json.RawMessage
	if err := json.Unmarshal(arr, &items); err != nil {
		return nil, "", false, fmt.Errorf("error reading the items of %s: %w", InstanceKey(c.ID, idx), err)
	}
	failures := []ItemFailure{}
	if region != nil {
		failures, err = t.tx.ItemFailures(t.ctx, t.run.ID, region.Direct, idx)
		if err != nil {
			return nil, "", false, fmt.Errorf("error listing the failed items of %s: %w", InstanceKey(c.ID, idx), err)
		}
	}
	if limit := tl.Limit(len(items)); len(failures) > limit {
		return nil, fmt.Sprintf("%d of %d items failed, more than the %d tolerated", len(failures), len(items), limit), false, nil
	}
	for _, f := range failures {
		if f.Index >= 0 && f.Index < len(items) {
			items[f.Index] = json.RawMessage("null")
		}
	}
	out, err = json.Marshal(struct {
		Items  []json.RawMessage `json:"items"`
		Errors []ItemFailure     `json:"errors"`
	}{items, failures})
	return out, "", true, err
}

// regionOf returns the region Collector c closes.
func (t *txn) regionOf(c *Node) *Region {
	for _, r := range t.graph.Regions {
		if r.Collector == c.ID {
			return r
		}
	}
	return nil
}
