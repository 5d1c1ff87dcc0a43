package callbacks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/internal/retrypolicy"
	"github.com/stitchd/stitchd/internal/startstop"
)

// NotificationStore is the notifications outbox (store.Store).
type NotificationStore interface {
	ClaimNotifications(ctx context.Context, limit int, lease time.Duration) ([]engine.Notification, error)
	RecordNotification(ctx context.Context, o engine.NotificationOutcome) error
}

// NotifierConfig configures a Notifier.
type NotifierConfig struct {
	Store NotificationStore
	// URL is the notification webhook ("" for none: then only
	// notifications with a URL of their own, a worker's cancel notices,
	// are sent).
	URL string
	// Signer gives the secrets a notification about a run is signed with
	// (those of its dispatches); Secret when nil.
	Signer Signer
	Secret []byte
	Client *http.Client
	Clock  engine.Clock
	Logger *slog.Logger
	// PollInterval is how often due notifications are claimed (default 1s).
	PollInterval time.Duration
	// MaxTries bounds the tries of one notification (default 12: with the
	// backoff below, about 20 minutes of retrying).
	MaxTries int
	// Backoff is the delay before try n+1 (default
	// retrypolicy.Notification: 1s doubling, capped at 5 minutes).
	Backoff func(try int) time.Duration
	// Workers is the number of concurrent deliveries (default 8).
	Workers int
	// Links, if set, adds signed one-click links for each assignee to
	// approval.requested notifications.
	Links *ActionLinker
}

// Notifier delivers the notification webhook's outbox: each notification is
// POSTed as JSON, signed like a dispatch (Standard Webhooks: webhook-id is
// the notification's id, so a receiver can drop a repeat), retried on a
// connection failure, a timeout, 408, 425, 429 or 5xx, with backoff, up to
// MaxTries; other answers give up at once. Any number of processes deliver
// from one outbox: a notification is claimed for a lease, and one a
// stopped process was sending is claimed again when its lease ends.
type Notifier struct {
	cfg       NotifierConfig
	wake      chan struct{}
	lifecycle startstop.Base
}

// notifyLease is how long a claimed notification is this process's.
const notifyLease = time.Minute

// NewNotifier returns a Notifier; Start runs it.
func NewNotifier(cfg NotifierConfig) *Notifier {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.MaxTries <= 0 {
		cfg.MaxTries = 12
	}
	if cfg.Backoff == nil {
		cfg.Backoff = retrypolicy.Notification
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = engine.SystemClock{}
	}
	return &Notifier{cfg: cfg, wake: make(chan struct{}, 1)}
}

// Start delivers until Stop (startstop.Service: on a running notifier it
// does nothing).
func (n *Notifier) Start(ctx context.Context) error {
	return n.lifecycle.StartWith(ctx, func(ctx context.Context) error {
		n.lifecycle.Go(ctx, n.run)
		return nil
	})
}

func (n *Notifier) run(ctx context.Context) {
	t := time.NewTicker(n.cfg.PollInterval)
	defer t.Stop()
	for {
		n.deliverDue(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.wake:
		}
	}
}

// Poke makes the notifier look for due notifications now (a commit wrote
// some).
func (n *Notifier) Poke() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Stop stops delivering and waits for deliveries under way (on a stopped
// notifier it does nothing).
func (n *Notifier) Stop() { n.lifecycle.Stop() }

// deliverDue claims and delivers due notifications until none is left.
func (n *Notifier) deliverDue(ctx context.Context) {
	for ctx.Err() == nil {
		batch, err := n.cfg.Store.ClaimNotifications(ctx, 100, notifyLease)
		if err != nil {
			if ctx.Err() == nil {
				n.cfg.Logger.Warn("notifier", "error", err)
			}
			return
		}
		if len(batch) == 0 {
			return
		}
		var wg sync.WaitGroup
		sem := make(chan struct{}, n.cfg.Workers)
		for _, note := range batch {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				n.deliver(ctx, note)
			}()
		}
		wg.Wait()
	}
}

func (n *Notifier) deliver(ctx context.Context, note engine.Notification) {
	code, err := n.post(ctx, note)
	if ctx.Err() != nil {
		return // the lease ends and a process tries again
	}
	o := engine.NotificationOutcome{ID: note.ID, Tries: note.Tries, Delivered: err == nil}
	if err != nil {
		o.Error = err.Error()
		if retryable(code) && note.Tries < n.cfg.MaxTries {
			o.RetryIn = n.cfg.Backoff(note.Tries)
		} else {
			n.cfg.Logger.Warn("notification given up", "id", note.ID, "type", note.Type, "run_id", note.RunID,
				"tries", note.Tries, "error", err)
		}
	}
	if err := n.cfg.Store.RecordNotification(ctx, o); err != nil && ctx.Err() == nil {
		n.cfg.Logger.Warn("error recording a notification's delivery", "id", note.ID, "error", err)
	}
}

func (n *Notifier) post(ctx context.Context, note engine.Notification) (int, error) {
	body := note.Payload
	if n.cfg.Links != nil && note.Type == engine.NotifyApprovalRequested {
		var err error
		if body, err = n.cfg.Links.AddLinks(ctx, note.RunID, body); err != nil {
			return 0, fmt.Errorf("error making the approval links: %w", err) // retried
		}
	}
	to := note.URL
	if to == "" {
		to = n.cfg.URL
	}
	if to == "" {
		return -1, errors.New("no notification webhook (--notify-url) to send it to") // given up
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, to, bytes.NewReader(body))
	if err != nil {
		return -1, fmt.Errorf("invalid notification URL: %w", err)
	}
	secrets := [][]byte{n.cfg.Secret}
	if n.cfg.Signer != nil {
		if secrets, err = n.cfg.Signer.Secrets(ctx, note.RunID); err != nil {
			return 0, fmt.Errorf("error loading the webhook secrets: %w", err) // retried
		}
	}
	ts := n.cfg.Clock.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "stitchd")
	req.Header.Set("webhook-id", note.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", SignWebhookAll(secrets, note.ID, ts, body))
	resp, err := n.cfg.Client.Do(req)
	if err != nil {
		if errors.Is(err, ErrAddressRefused) {
			return -1, err
		}
		return 0, fmt.Errorf("notification webhook unreachable: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, nil
	}
	return resp.StatusCode, fmt.Errorf("notification webhook answered %d", resp.StatusCode)
}
