// Package api holds the contract's types, generated from openapi.yaml by
// oapi-codegen (go generate ./internal/client/api; a test checks the
// committed file is what the spec gives), so the client's types cannot
// drift from the server's answers.
package api

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -generate types -package api -o api.gen.go ../../../openapi.yaml
