// Package web is stitchd's HTTP server (Echo): the REST API of the public
// contract (docs: ../openapi.yaml), the worker callback endpoint, server-sent
// event streams woken by Postgres LISTEN/NOTIFY, health checks and the
// embedded UI. It is the only package that imports echo.
package web
