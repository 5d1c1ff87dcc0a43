// Package stitchd holds what must be embedded from the module root: the
// public contract, openapi.yaml, served at GET /api/v1/openapi.yaml.
package stitchd

import _ "embed"

// OpenAPI is openapi.yaml, the machine-readable public contract.
//
//go:embed openapi.yaml
var OpenAPI []byte
