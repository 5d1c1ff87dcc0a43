// Command custom-node is stitchd with one node type of its own, Greet,
// added through the public package github.com/stitchd/stitchd/server: a program
// outside stitchd's module that registers a type and runs the server.
//
//	go run . serve --database-url postgres://… --auth-token dev-token
//
// A flow may then use {"type": "Greet", "data": {"greeting": "Hello"}}:
// the node completes at once with {"message": "Hello, <input.name>"}. The
// type is in the editor's palette with its colour and mark, and its
// settings form is its schema.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tidwall/gjson"

	"github.com/stitchd/stitchd/engine"
	"github.com/stitchd/stitchd/server"
)

// Greet is the type's registration: its handler, what its data may be,
// and how the editor shows it.
func Greet() engine.NodeTypeSpec {
	return engine.NodeTypeSpec{
		Type: "Greet", Label: "Greet", IDPrefix: "greet", Icon: "☀", Color: "#ca8a04",
		Help:          "Greets the name in its input.",
		DefaultConfig: json.RawMessage(`{"greeting":"Hello"}`),
		ConfigSchema: json.RawMessage(`{"type":"object","required":["greeting"],"additionalProperties":false,
			"properties":{"greeting":{"type":"string","minLength":1,"maxLength":100},
			"label":{"type":"string"},"description":{"type":"string"}}}`),
		Statuses: []engine.Status{engine.StatusPending, engine.StatusCompleted, engine.StatusFailed,
			engine.StatusSkipped, engine.StatusCancelled},
		Handler: greet{},
	}
}

type greet struct{}

// Fire completes the node with its greeting, or fails it when the input
// has no name.
func (greet) Fire(_ context.Context, fc engine.FireContext) error {
	name := gjson.GetBytes(fc.Input(), "name")
	if name.Type != gjson.String || name.Str == "" {
		return fc.Fail("the input has no name to greet")
	}
	greeting := gjson.GetBytes(fc.Node().Config, "greeting").Str
	out, err := json.Marshal(map[string]string{"message": greeting + ", " + name.Str})
	if err != nil {
		return fmt.Errorf("error encoding the greeting: %w", err)
	}
	return fc.Complete(out)
}

func main() { os.Exit(run()) }

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := server.Main(ctx, os.Args[1:], server.Config{NodeTypes: []engine.NodeTypeSpec{Greet()}}); err != nil {
		fmt.Fprintln(os.Stderr, "custom-node:", err)
		return 1
	}
	return 0
}
