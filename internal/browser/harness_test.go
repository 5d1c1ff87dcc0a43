package browser_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/stitchd/stitchd/internal/app"
	"github.com/stitchd/stitchd/internal/contracttest"
	"github.com/stitchd/stitchd/internal/testkit"
	"github.com/stitchd/stitchd/store/storetest"
)

// TestMain runs the tests on one Chromium, started by the first test
// that needs it (launching one per test cost about a second each), and
// closes it after the last.
func TestMain(m *testing.M) {
	code := storetest.Run(m)
	shared.close()
	os.Exit(code)
}

// shared is the package's Chromium. Each test has a browser context of
// its own in it (cookies, storage and cache of its own, as a fresh
// profile has): tests stay independent, and otherBrowser's person (a
// second browser context) shares nothing with the test's first.
var shared sharedBrowser

type sharedBrowser struct {
	once   sync.Once
	ctx    context.Context // the browser's first tab: its context owns the process
	cancel func()
	err    error
	// profile is Chromium's user data directory. Its helpers may still
	// write to it as it exits, so it is removed best-effort rather than
	// with t.TempDir.
	profile string
}

// tab opens a tab in a new browser context, its own window in it, on the
// shared Chromium (started on first use); the tab is closed and the
// browser context disposed when the test ends. A tab opened from it
// (chromedp.NewContext(tab)) is in the same browser context.
func (b *sharedBrowser) tab(t *testing.T) context.Context {
	t.Helper()
	browser := chromedp.FromContext(b.start(t)).Browser
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	exec := cdp.WithExecutor(ctx, browser)
	id, err := target.CreateBrowserContext().Do(exec)
	require.NoError(t, err, "creating a browser context")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := target.DisposeBrowserContext(id).Do(cdp.WithExecutor(ctx, browser)); err != nil {
			t.Logf("disposing the browser context: %v", err)
		}
	})
	// A new window: a browser context without one has nowhere to open a
	// tab ("Failed to open new tab - no browser is open"), and
	// chromedp.WithNewBrowserContext asks for none.
	tid, err := target.CreateTarget("about:blank").WithBrowserContextID(id).WithNewWindow(true).Do(exec)
	require.NoError(t, err, "opening a window")
	tab, cancelTab := chromedp.NewContext(b.ctx, chromedp.WithTargetID(tid))
	t.Cleanup(cancelTab) // before the dispose above: cleanups run last first
	// Tabs opened from this one go in its browser context (NewContext
	// copies the field; WithExistingBrowserContext cannot go with
	// WithTargetID).
	chromedp.FromContext(tab).BrowserContextID = id
	return tab
}

// start starts Chromium on first use and returns its first tab's context.
func (b *sharedBrowser) start(t *testing.T) context.Context {
	t.Helper()
	b.once.Do(func() {
		path, err := chromiumPath()
		if err != nil {
			b.err = err
			return
		}
		if b.profile, err = os.MkdirTemp("", "stitchd-chromium-"); err != nil {
			b.err = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.UserDataDir(b.profile),
			chromedp.WindowSize(1280, 800),
		)
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		// Not a test's Logf: the browser outlives every test.
		bctx, cancelBrowser := chromedp.NewContext(actx)
		b.ctx, b.cancel = bctx, func() { cancelBrowser(); cancelAlloc() }
		// The first run starts the browser, bound to bctx (not a deadline's).
		if b.err = chromedp.Run(bctx); b.err != nil {
			b.err = fmt.Errorf("starting Chromium: %w", b.err)
		}
	})
	require.NoError(t, b.err)
	return b.ctx
}

func (b *sharedBrowser) close() {
	if b.cancel != nil {
		b.cancel()
	}
	if b.profile != "" {
		_ = os.RemoveAll(b.profile)
	}
}

const token = "browser-token"

// stack is a real stitchd, a loopback worker and a Chromium tab.
type stack struct {
	t      *testing.T
	app    *app.App
	url    string
	worker *worker
	ctx    context.Context // the tab
	shots  string
	// client makes the test's own API calls, each checked against
	// openapi.yaml (internal/contracttest).
	client *http.Client
}

// worker answers every dispatch with 202 and calls back after delay with
// {"status":"completed","output":{"scored_by": nodeId, "score": 42}}, or
// fails when the input has "fail": true.
type worker struct {
	*testkit.Worker
	// output, if set, replaces the output every callback carries.
	output atomic.Pointer[map[string]any]
}

func newWorker(t *testing.T, delay time.Duration) *worker {
	w := &worker{}
	w.Worker = testkit.NewWorker(t, testkit.WorkerOptions{
		CallbackDelay: delay, // a worker that takes a moment, as real ones do
		CallBack: func(d testkit.Dispatch) (string, bool) {
			var in map[string]any
			_ = json.Unmarshal(d.Payload.Input, &in)
			out := map[string]any{"scored_by": d.Payload.NodeID, "score": 42}
			if o := w.output.Load(); o != nil {
				out = *o
			}
			body := map[string]any{"status": "completed", "output": out}
			if in != nil && in["fail"] == true {
				body = map[string]any{"status": "failed", "error": "this item is marked to fail"}
			}
			b, _ := json.Marshal(body)
			return string(b), true
		}})
	return w
}

// chromiumPath finds Debian's Chromium; `make test` installs it. A
// missing browser fails the tests: browser tests never skip.
func chromiumPath() (string, error) {
	for _, p := range []string{os.Getenv("CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		return "", fmt.Errorf("chromium is not installed: `make test` installs it (apt-get install chromium): %w", err)
	}
	return p, nil
}

func newStack(t *testing.T, mods ...func(*app.Config)) *stack {
	t.Helper()
	_, dbURL := storetest.IsolatedDB(t)
	ctx := context.Background()
	cfg := app.Config{Addr: "127.0.0.1:0", DatabaseURL: dbURL, AuthToken: token,
		// Polls every 200 ms, as internal/app's harness does: an idle
		// process's pollers (sweeper, dispatcher, scheduler, notifier,
		// retainer, broker consumers) cost three times the CPU at 50 ms.
		// Commits hand dispatches over and run events are pushed, not
		// polled; a deadline, timer or retry is noticed at most 150 ms
		// later.
		PollInterval: 200 * time.Millisecond, DispatchTimeout: 5 * time.Second,
		PasswordParams: testkit.CheapPasswords(), Logger: slog.New(slog.DiscardHandler)}
	for _, m := range mods {
		m(&cfg)
	}
	a, err := app.New(ctx, cfg)
	require.NoError(t, err)
	a.TestSignals.Init()
	require.NoError(t, a.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Stop(sctx)
	})

	tab := shared.tab(t)
	// Page errors and console output go to the test log.
	chromedp.ListenTarget(tab, func(ev any) {
		switch e := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			// A person would press OK on confirm() dialogs.
			go func() { _ = chromedp.Run(tab, page.HandleJavaScriptDialog(true)) }()
		case *runtime.EventExceptionThrown:
			t.Logf("browser exception: %s", e.ExceptionDetails.Error())
		case *runtime.EventConsoleAPICalled:
			var parts []string
			for _, a := range e.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			t.Logf("browser console.%s: %s", e.Type, strings.Join(parts, " "))
		}
	})
	// The web UI's own API calls are held to openapi.yaml as the test's are.
	watchUITraffic(tab, t, a.URL)
	require.NoError(t, chromedp.Run(tab, chromedp.EmulateViewport(1280, 800), network.Enable()), "starting Chromium")

	shots := filepath.Join("..", "..", "test-artifacts", "browser")
	require.NoError(t, os.MkdirAll(shots, 0o755))
	return &stack{t: t, app: a, url: a.URL, worker: newWorker(t, 300*time.Millisecond), ctx: tab, shots: shots,
		client: contracttest.Client(t, http.DefaultClient)}
}

// run runs browser actions with a deadline, failing the test on error.
func (s *stack) run(what string, actions ...chromedp.Action) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		s.shot("failure-" + strings.ReplaceAll(what, " ", "-"))
		s.t.Fatalf("%s: %v", what, err)
	}
}

// waitJS waits until a JavaScript expression is truthy.
func (s *stack) waitJS(what, expr string) {
	s.t.Helper()
	s.run(what, chromedp.Poll(expr, nil, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(25*time.Second)))
}

func (s *stack) text(sel string) string {
	s.t.Helper()
	var out string
	s.run("read "+sel, chromedp.Text(sel, &out, chromedp.ByQuery))
	return out
}

// shot saves a PNG of the viewport as a test artefact.
func (s *stack) shot(name string) {
	var buf []byte
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, chromedp.CaptureScreenshot(&buf)); err != nil {
		s.t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(s.shots, name+".png")
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		s.t.Logf("screenshot %s: %v", name, err)
	}
}

// settle waits until the first element matching sel has kept its place and
// size over three polls (150 ms): a canvas node moves when React Flow fits
// the view after measuring its nodes, and a click computed before that
// lands on the pane (seen once in CI, under the load of the whole suite).
// A node React Flow has not measured is hidden, and a click falls through
// it: it settles once shown.
func (s *stack) settle(sel string) {
	s.t.Helper()
	s.waitJS("settle "+sel, fmt.Sprintf(`(() => { const el = document.querySelector(%[1]q); if (!el || getComputedStyle(el).visibility === "hidden") return false;
		const b = el.getBoundingClientRect(), k = [b.x, b.y, b.width, b.height].join(",");
		const w = (window.__settle ??= {}), n = w[%[1]q]?.k === k ? w[%[1]q].n + 1 : 0;
		w[%[1]q] = {k, n}; return n >= 3; })()`, sel))
}

// settleInCanvas is settle for a node of a small flow that fits the
// canvas: a canvas fitted before its nodes were measured can leave the node
// outside, where a click misses it (seen once in the full suite), so the
// view is fitted again (its control) until the node is inside.
func (s *stack) settleInCanvas(sel string) {
	s.t.Helper()
	inside := fmt.Sprintf(`(() => { const b = document.querySelector(%q).getBoundingClientRect();
			const p = document.querySelector(".react-flow__renderer").getBoundingClientRect();
			return b.left >= p.left && b.top >= p.top && b.right <= p.right && b.bottom <= p.bottom; })()`, sel)
	for try := 0; ; try++ {
		s.settle(sel)
		// Inside, and still inside once settled again: a live run's view
		// may still be moving (a node growing as its badge changes).
		var in bool
		s.run("in canvas "+sel, chromedp.Evaluate(inside, &in))
		if in {
			s.settle(sel)
			s.run("still in canvas "+sel, chromedp.Evaluate(inside, &in))
			if in {
				return
			}
		}
		if try == 5 {
			var where string
			s.run("where "+sel, chromedp.Evaluate(fmt.Sprintf(`(() => { const b = document.querySelector(%q).getBoundingClientRect();
				const p = document.querySelector(".react-flow__renderer").getBoundingClientRect();
				return JSON.stringify({node: [b.left, b.top, b.right, b.bottom], pane: [p.left, p.top, p.right, p.bottom]}); })()`, sel), &where))
			s.shot("outside-canvas")
			s.t.Fatalf("%s stays outside the canvas: %s", sel, where)
		}
		s.run("fit view", chromedp.Click(".react-flow__controls-fitview", chromedp.ByQuery))
	}
}

// center returns the viewport centre of the first element matching sel.
func (s *stack) center(sel string) (float64, float64) {
	s.t.Helper()
	var r struct{ X, Y float64 }
	s.run("locate "+sel, chromedp.WaitVisible(sel, chromedp.ByQuery),
		chromedp.Evaluate(fmt.Sprintf(`(() => { const b = document.querySelector(%q).getBoundingClientRect();
			return {X: b.left + b.width/2, Y: b.top + b.height/2}; })()`, sel), &r))
	return r.X, r.Y
}

// drag presses the left button at (x0, y0), moves in steps to (x1, y1) and
// releases: real mouse input, turned into pointer events by the browser.
func (s *stack) drag(x0, y0, x1, y1 float64) {
	s.t.Helper()
	acts := []chromedp.Action{
		input.DispatchMouseEvent(input.MouseMoved, x0, y0),
		input.DispatchMouseEvent(input.MousePressed, x0, y0).WithButton(input.Left).WithButtons(1).WithClickCount(1),
	}
	const steps = 12
	for i := 1; i <= steps; i++ {
		f := float64(i) / steps
		acts = append(acts, input.DispatchMouseEvent(input.MouseMoved, x0+(x1-x0)*f, y0+(y1-y0)*f).
			WithButton(input.Left).WithButtons(1))
	}
	// After a drag, d3-drag (React Flow's) swallows clicks until a
	// setTimeout(0) of its own has run: a click sent at once, before that
	// task (seen under the whole suite's load: the Save after moving a node
	// never reached the page), is lost. A timer of ours, queued after it,
	// waits that task out.
	acts = append(acts, input.DispatchMouseEvent(input.MouseReleased, x1, y1).WithButton(input.Left).WithClickCount(1),
		chromedp.Evaluate(`new Promise(r => setTimeout(() => r(true), 0))`, nil,
			func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	s.run("drag", acts...)
}

// sendKeys is chromedp.SendKeys (focus the first element matching sel,
// once visible, and type v with key events) without its data race: it
// reads the node's attributes, for a file input's type, unguarded while
// the page's attribute changes write them (seen under -race).
func sendKeys(sel, v string) chromedp.QueryAction {
	return chromedp.QueryAfter(sel, func(ctx context.Context, _ runtime.ExecutionContextID, nodes ...*cdp.Node) error {
		if len(nodes) < 1 {
			return fmt.Errorf("selector %q did not return any nodes", sel)
		}
		return chromedp.KeyEventNode(nodes[0], v).Do(ctx)
	}, chromedp.ByQuery, chromedp.NodeVisible)
}

// setValue replaces a React-controlled field's value the way typing does.
func setValue(sel, v string) chromedp.Action {
	return chromedp.Evaluate(fmt.Sprintf(`(() => { const el = document.querySelector(%q);
		const proto = el.tagName === "TEXTAREA" ? HTMLTextAreaElement.prototype : el.tagName === "SELECT" ? HTMLSelectElement.prototype : HTMLInputElement.prototype;
		Object.getOwnPropertyDescriptor(proto, "value").set.call(el, %q);
		el.dispatchEvent(new Event(el.tagName === "SELECT" ? "change" : "input", {bubbles: true})); return true; })()`, sel, v), nil)
}

// api calls the stitchd API directly (setup the test is not about).
func (s *stack) api(method, path string, body any, out any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(s.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(s.t.Context(), method, s.url+"/api/v1"+path, rd)
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Less(s.t, resp.StatusCode, 300, "%s %s: %s", method, path, b)
	if out != nil {
		require.NoError(s.t, json.Unmarshal(b, out))
	}
}

// tokenSignIn signs in on the sign-in page with an API token (its second
// way; the first is email and password).
func tokenSignIn(tok string) chromedp.Action {
	return chromedp.Tasks{
		chromedp.WaitVisible(`[data-action="use-token"]`, chromedp.ByQuery),
		chromedp.Click(`[data-action="use-token"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#token", chromedp.ByQuery),
		setValue("#token", tok),
		chromedp.Click(`form button[type="submit"]`, chromedp.ByQuery),
	}
}

// passwordSignIn signs in on the sign-in page with an email and password.
func passwordSignIn(email, password string) chromedp.Action {
	return chromedp.Tasks{
		chromedp.WaitVisible("#email", chromedp.ByQuery),
		setValue("#email", email),
		setValue("#password", password),
		chromedp.Click(`form button[type="submit"]`, chromedp.ByQuery),
	}
}

// person is a user signed in to the API with a session (a cookie and its
// CSRF token), as the UI is: what they do is theirs in the audit trail.
type person struct {
	t      *testing.T
	url    string
	email  string
	client *http.Client
	csrf   string
}

// login signs email in through POST /api/v1/auth/login.
func (s *stack) login(email, password string) *person {
	s.t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(s.t, err)
	p := &person{t: s.t, url: s.url, email: email, client: contracttest.Client(s.t, &http.Client{Jar: jar, Timeout: 30 * time.Second})}
	var out struct {
		CSRFToken string `json:"csrf_token"`
	}
	code, body := p.call("POST", "/auth/login", map[string]any{"email": email, "password": password}, &out)
	require.Equal(s.t, http.StatusOK, code, "sign in %s: %s", email, body)
	p.csrf = out.CSRFToken
	return p
}

// call makes an API call as the person and returns the status and body
// (out is filled from a 2xx answer).
func (p *person) call(method, path string, body any, out any) (int, string) {
	p.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(p.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(p.t.Context(), method, p.url+"/api/v1"+path, rd)
	require.NoError(p.t, err)
	req.Header.Set("Content-Type", "application/json")
	if p.csrf != "" {
		req.Header.Set("X-CSRF-Token", p.csrf)
	}
	resp, err := p.client.Do(req)
	require.NoError(p.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		require.NoError(p.t, json.Unmarshal(b, out))
	}
	return resp.StatusCode, string(b)
}

// awaitPromise makes chromedp.Evaluate wait for the promise the
// expression returns.
func awaitPromise(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }
