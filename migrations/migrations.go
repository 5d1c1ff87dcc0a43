package migrations

import "embed"

// FS holds the numbered goose SQL migrations.
//
//go:embed *.sql
var FS embed.FS
