package browser_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/stitchd/stitchd/internal/contracttest"
)

// uiTraffic checks what the web UI itself exchanges with stitchd — every
// request the page makes to the server's origin and its answer, read from
// Chromium's network events — against openapi.yaml
// (internal/contracttest), as the test's own API calls are: a status the
// operation does not list, a body its schema refuses or a request it
// refuses that the server took fails the test. Event streams are checked
// by status and content type.
type uiTraffic struct {
	t    *testing.T
	tab  context.Context
	base string

	mu      sync.Mutex
	closed  bool // no new exchanges: the test is ending
	over    bool // no more failures: the test ended
	pending map[network.RequestID]*uiExchange
	checks  sync.WaitGroup
}

type uiExchange struct {
	req    *http.Request
	body   []byte
	status int
	header http.Header
	stream bool
}

// watchUITraffic starts checking the tab's exchanges with base; checks
// still running when the test ends are waited for (a few seconds), later
// ones dropped.
func watchUITraffic(tab context.Context, t *testing.T, base string) {
	u := &uiTraffic{t: t, tab: tab, base: base, pending: map[network.RequestID]*uiExchange{}}
	chromedp.ListenTarget(tab, u.on)
	t.Cleanup(func() {
		u.mu.Lock()
		u.closed = true
		u.mu.Unlock()
		done := make(chan struct{})
		go func() { u.checks.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		u.mu.Lock()
		u.over = true
		u.mu.Unlock()
	})
}

func (u *uiTraffic) on(ev any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return
	}
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		if !strings.HasPrefix(e.Request.URL, u.base+"/") {
			return
		}
		rq, err := http.NewRequestWithContext(context.Background(), e.Request.Method, e.Request.URL, nil)
		if err != nil {
			return
		}
		for k, v := range e.Request.Headers {
			rq.Header.Set(k, fmt.Sprint(v))
		}
		x := &uiExchange{req: rq}
		for _, p := range e.Request.PostDataEntries {
			b, err := base64.StdEncoding.DecodeString(p.Bytes)
			if err == nil {
				x.body = append(x.body, b...)
			}
		}
		u.pending[e.RequestID] = x
	case *network.EventResponseReceived:
		x := u.pending[e.RequestID]
		if x == nil {
			return
		}
		x.status = int(e.Response.Status)
		x.header = http.Header{}
		for k, v := range e.Response.Headers {
			x.header.Set(k, fmt.Sprint(v))
		}
		x.stream = e.Type == network.ResourceTypeEventSource || strings.HasPrefix(x.header.Get("Content-Type"), "text/event-stream")
		if x.stream {
			delete(u.pending, e.RequestID)
			u.check(x, nil, true)
		}
	case *network.EventLoadingFinished:
		x := u.pending[e.RequestID]
		delete(u.pending, e.RequestID)
		if x == nil || x.status == 0 {
			return
		}
		// The body is read from Chromium, off its event loop.
		u.checks.Add(1)
		go func() {
			defer u.checks.Done()
			var body []byte
			err := chromedp.Run(u.tab, chromedp.ActionFunc(func(ctx context.Context) error {
				var err error
				body, err = network.GetResponseBody(e.RequestID).Do(ctx)
				return err
			}))
			u.mu.Lock()
			defer u.mu.Unlock()
			if u.over || (u.closed && err != nil) {
				return
			}
			u.check(x, body, err != nil)
		}()
	case *network.EventLoadingFailed:
		delete(u.pending, e.RequestID)
	}
}

// check checks one exchange (u.mu held).
func (u *uiTraffic) check(x *uiExchange, body []byte, partial bool) {
	if err := contracttest.Problems(contracttest.Exchange{Request: x.req, RequestBody: x.body, Status: x.status,
		Header: x.header, Body: body, Partial: partial}); err != nil {
		u.t.Errorf("the web UI's request: %v", err)
	}
}
