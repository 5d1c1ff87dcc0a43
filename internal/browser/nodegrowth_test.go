package browser_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// TestUINodesStayApartAsTheyGrow: two steps added from the palette, then
// given the longest label there may be and an expression that fails at
// save (a problem painted on each), do not cover each other: a node's
// words are clamped to two lines, and a new node's place keeps the room a
// node can grow to. Before, the second step went 86 px under the first
// and a typed label made the first cover it.
func TestUINodesStayApartAsTheyGrow(t *testing.T) {
	s := newStack(t)
	s.run("new flow", chromedp.Navigate(s.url+"/flows/new"), tokenSignIn(token))
	s.run("name", chromedp.WaitVisible(`[data-palette="Transform"]`, chromedp.ByQuery), setValue("#flow-name", "Growing"))
	label := strings.Repeat("Check the supplier's quote ", 8)[:200]
	for _, id := range []string{"transform1", "transform2"} {
		s.run("add "+id, chromedp.Focus(`[data-palette="Transform"]`, chromedp.ByQuery), chromedp.KeyEvent("\r"),
			chromedp.WaitVisible(`form[aria-label="Transform `+id+` settings"]`, chromedp.ByQuery))
		s.run("label "+id, chromedp.Focus("#node-label", chromedp.ByQuery), setValue("#node-label", label))
		s.run("expression "+id, typeInEditor("node-expression", `{"total": input.amount * (1 + input.tax_rate), "note": "`+strings.Repeat("x", 60)+`" +}`))
	}
	s.run("save", chromedp.Click(`//button[text()="Save"]`, chromedp.BySearch))
	s.waitJS("refused, painted", `document.querySelectorAll(".react-flow__node .snode-problem").length === 2`)
	s.settle(canvasNode("transform2"))
	s.shot("ng01-grown-nodes")
	var got struct {
		Overlap string
		Sizes   [][2]float64
	}
	s.run("measure", chromedp.Evaluate(`(() => {
		const z = new DOMMatrix(getComputedStyle(document.querySelector(".react-flow__viewport")).transform).a;
		const rs = [...document.querySelectorAll(".react-flow__node")].map(n => [n.dataset.id, n.getBoundingClientRect()]);
		let overlap = "";
		for (const [id, r] of rs) for (const [id2, r2] of rs)
			if (id < id2 && r.left < r2.right && r2.left < r.right && r.top < r2.bottom && r2.top < r.bottom) overlap = id + " covers " + id2;
		return {Overlap: overlap, Sizes: rs.map(([, r]) => [r.width / z, r.height / z])};
	})()`, &got))
	require.Empty(t, got.Overlap)
	require.Len(t, got.Sizes, 2)
	for _, sz := range got.Sizes {
		require.LessOrEqual(t, sz[0], 240.5, "NODE_MAX.width: %v", got.Sizes)
		require.LessOrEqual(t, sz[1], 140.5, "NODE_MAX.height: %v", got.Sizes)
	}
	var title string
	s.run("tooltip", chromedp.Evaluate(`document.querySelector(".react-flow__node[data-id='transform1'] .snode-title").title`, &title))
	require.Equal(t, label, title, "the whole label is in the tooltip")
}

// TestUIManyStepsAddedStayApart: steps added from the palette after the
// visible pane is full go beside it, on top of no other, and the view
// is fitted to show each with the rest (they all went on the pane's
// centre, one on another).
func TestUIManyStepsAddedStayApart(t *testing.T) {
	s := newStack(t)
	s.run("new flow", chromedp.Navigate(s.url+"/flows/new"), tokenSignIn(token))
	s.run("palette", chromedp.WaitVisible(`[data-palette="Transform"]`, chromedp.ByQuery))
	const n = 12
	for i := 1; i <= n; i++ {
		s.run("add", chromedp.Focus(`[data-palette="Transform"]`, chromedp.ByQuery), chromedp.KeyEvent("\r"),
			chromedp.WaitVisible(fmt.Sprintf(`form[aria-label="Transform transform%d settings"]`, i), chromedp.ByQuery))
		// Settled (the view refitted), not fitted by the test.
		s.settle(canvasNode(fmt.Sprintf("transform%d", i)))
		require.True(t, s.inCanvas(canvasNode(fmt.Sprintf("transform%d", i))), "transform%d is in view", i)
	}
	s.shot("ng02-many-added")
	var overlap string
	s.run("overlap", chromedp.Evaluate(`(() => {
		const rs = [...document.querySelectorAll(".react-flow__node")].map(n => [n.dataset.id, n.getBoundingClientRect()]);
		for (const [id, r] of rs) for (const [id2, r2] of rs)
			if (id < id2 && r.left < r2.right && r2.left < r.right && r.top < r2.bottom && r2.top < r.bottom) return id + " covers " + id2;
		return rs.length === `+fmt.Sprint(n)+` ? "" : "only " + rs.length + " nodes";
	})()`, &overlap))
	require.Empty(t, overlap)
}

// TestUIStepAddedBesideAFullPaneOfABigFlow: in a flow too big to show
// whole at a readable zoom, a step added where the pane is full goes
// beside it and the view moves to it at the same zoom — not back to the
// flow's start, away from where the person was working.
func TestUIStepAddedBesideAFullPaneOfABigFlow(t *testing.T) {
	s := newStack(t)
	var nodes []map[string]any
	var edges []map[string]any
	for c := 0; c < 12; c++ {
		for r := 0; r < 12; r++ {
			id := fmt.Sprintf("g%d_%d", c, r)
			nodes = append(nodes, transformNode(id, c*290, r*160))
			if c > 0 {
				edges = append(edges, map[string]any{"id": "e" + id, "source": fmt.Sprintf("g%d_%d", c-1, r), "target": id})
			}
		}
	}
	id := s.editorFlow("Big", nodes, edges, nil)
	s.run("open", chromedp.Navigate(s.url+"/flows/"+id), tokenSignIn(token))
	s.settle(canvasNode("g0_0"))
	// Away from the start, inside the grid (a pane full of steps): the
	// view dragged left and up, from a point of the pane no node covers.
	var at struct{ X, Y float64 }
	s.run("free point", chromedp.Evaluate(`(() => { const p = document.querySelector(".react-flow__renderer").getBoundingClientRect();
		for (let y = p.top + 20; y < p.bottom - 20; y += 7) for (let x = p.right - 40; x > p.left + 40; x -= 7) {
			const el = document.elementFromPoint(x, y); if (el && el.classList.contains("react-flow__pane")) return {X: x, Y: y}; }
		return {X: 0, Y: 0}; })()`, &at))
	require.Positive(t, at.X, "a free point of the pane")
	s.drag(at.X, at.Y, at.X-500, at.Y-300)
	s.settle(".react-flow__viewport")
	require.False(t, s.inCanvas(canvasNode("g0_0")), "the view is away from the start")
	zoom := func() float64 {
		var z float64
		s.run("zoom", chromedp.Evaluate(`new DOMMatrix(getComputedStyle(document.querySelector(".react-flow__viewport")).transform).a`, &z))
		return z
	}
	before := zoom()

	s.run("add", chromedp.Focus(`[data-palette="Transform"]`, chromedp.ByQuery), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(`form[aria-label="Transform transform1 settings"]`, chromedp.ByQuery))
	s.settle(canvasNode("transform1"))
	s.shot("ng03-added-in-a-big-flow")
	require.True(t, s.inCanvas(canvasNode("transform1")), "the new step is in view")
	var moved bool
	s.run("beside the pane", chromedp.Evaluate(`(() => { const n = document.querySelector(".react-flow__node[data-id='transform1']");
		return [...document.querySelectorAll(".react-flow__node")].filter(x => x !== n).every(x => { const a = n.getBoundingClientRect(), b = x.getBoundingClientRect();
			return a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top; }); })()`, &moved))
	require.True(t, moved, "on top of no step")
	require.False(t, s.inCanvas(canvasNode("g0_0")), "the view did not go back to the flow's start")
	require.InDelta(t, before, zoom(), 0.001, "the same zoom")
}
