// Package server runs stitchd — the server and its whole command line —
// from a program of your own, with node types of your own beside the
// built-in ones. Each type is one engine.NodeTypeSpec: its handler, its
// config schema, its capabilities and its look (docs/node-types.md).
//
//	func main() {
//		err := server.Main(ctx, os.Args[1:], server.Config{
//			NodeTypes: []engine.NodeTypeSpec{greet.Type()},
//		})
//		…
//	}
//
// examples/custom-node is such a program, in a module of its own.
package server
