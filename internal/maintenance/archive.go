package maintenance

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/stitchd/stitchd/callbacks"
	"github.com/stitchd/stitchd/engine"
)

// archiveBatch is how many runs go to the archive in one request: a run
// carries all its node states and events, so fewer than are deleted at
// once without one.
const archiveBatch = 50

// archiver sends the Retainer's batches to the archive.
type archiver struct {
	url    string
	client *http.Client
	// secret is the current webhook secret (store.Store.WebhookSecret).
	secret func(ctx context.Context) ([]byte, error)
	clock  engine.Clock
}

// send POSTs a batch of runs to the archive, signed as dispatches are
// (Standard Webhooks; webhook-id the batch's id, the same for the same
// runs, so a receiver drops a batch it already has): 2xx takes it.
func (a *archiver) send(ctx context.Context, batchID string, body []byte) error {
	secret, err := a.secret(ctx)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("invalid archive URL: %w", err)
	}
	ts := a.clock.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "stitchd")
	req.Header.Set("webhook-id", batchID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", callbacks.SignWebhook(secret, batchID, ts, body))
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("archive unreachable: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("archive answered %d", resp.StatusCode)
	}
	return nil
}
