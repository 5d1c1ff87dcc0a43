// Package fixture names docs: docs/a.md (exists), docs/a.md#a-heading
// (and its heading), DESIGN.md (does not exist), docs/a.md#missing (no
// such heading), https://example.com/API.md (a URL's, not the repository's).
package fixture
