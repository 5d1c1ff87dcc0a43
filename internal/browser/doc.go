// Package browser holds the end-to-end tests of the web UI: Debian's
// Chromium, driven by chromedp, against a real stitchd (internal/app) on a
// real Postgres database and a real loopback worker. Screenshots of every
// page are written to test-artifacts/browser at the repository root.
package browser
