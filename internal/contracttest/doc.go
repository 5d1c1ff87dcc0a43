// Package contracttest checks what tests exchange with stitchd over HTTP
// against the public contract, openapi.yaml (kin-openapi's
// openapi3filter): the answer's status must be one its operation lists,
// its content type one that status names, a JSON body must fit the
// schema; a request the contract refuses must not be accepted. A mismatch
// fails the test (Errorf) with the exchange.
//
// One check, three ways in: Transport (or Client) for the harnesses
// that talk to a stitchd over the network (internal/app, internal/browser,
// internal/chaos), Handler for a handler served in-process, Check for an
// exchange a test holds whole (the web package's recorder).
//
// What is checked:
//   - A path under /api/ that the contract lacks fails, unless it was
//     answered 404 or 405 (the test asked for a path or method that does
//     not exist); other paths outside the contract (the UI's pages, a
//     worker's URL) are not checked. OPTIONS and HEAD are not checked
//     (405, OPTIONS and HEAD are described for every path in prose).
//   - A request the contract refuses (a body or parameter its schema
//     does not allow) fails when the server accepted it (any answer but
//     4xx): the contract is stricter than the server, or the server too
//     lenient. A test that means its request to be accepted although the
//     contract refuses it says so with InvalidRequestHeader or
//     WithInvalidRequest. A request the contract allows but the server
//     refuses is not a failure: its reason may be state (a section not on
//     the board), which no schema states.
//   - The answer: ValidateResponse with undocumented statuses refused;
//     a JSON body checked against the schema once it was read to its end
//     (a body closed early is read to its end first, except an event
//     stream, whose status and content type alone are checked).
//
// Tests only: production code never imports it (internal/archtest).
package contracttest
