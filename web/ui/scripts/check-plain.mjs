// A tiny check of src/plainProblem.ts: `node scripts/check-plain.mjs`.
// The module is transpiled with the TypeScript the build uses.
import { readFileSync } from "node:fs";
import assert from "node:assert/strict";
import ts from "typescript";

const src = readFileSync(new URL("../src/plainProblem.ts", import.meta.url), "utf8");
const js = ts.transpileModule(src, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
const { plainProblem } = await import("data:text/javascript," + encodeURIComponent(js));

const cases = [
  ["unexpected token EOF (1:15)\n | {\"amount\": input.\n | ..............^", "ends too early", '{"amount": input.'],
  ["unexpected end of expression (1:6)", "ends too early"],
  ['unexpected token Operator(">") (1:3)', "“>” is not expected here (column 3)"],
  ["unknown name lead (1:1)", "“lead” is not a name"],
  ["literal not terminated (1:5)", "not closed"],
  ["expected bool, but got int", "true or false, but this gives a number"],
  ["invalid operation: + (mismatched types string and int) (1:7)", "“+” cannot be used between text and a number"],
  ["cannot fetch amount from string (1:7)", "no field “amount” in text"],
  ["fits none of the alternatives: (1) minimum: got -1, want 0; (2) got number, want string", "fits none of the accepted forms"],
  ["missing property 'email'", "“email” must be filled in"],
  ["missing properties 'a', 'b'", "These must be filled in: a, b"],
  ["got string, want integer", "A whole number is expected here, not text"],
  ["value must be one of 'low', 'high'", "Choose one of 'low', 'high'"],
  ["additional properties 'x' not allowed", "x is not allowed here"],
  ["minimum: got 0, want 1", "At least 1"],
  ["minLength: got 0, want 3", "At least 3 characters"],
];
for (const [msg, want, expr] of cases) {
  const got = plainProblem(msg, expr);
  assert.ok(got && got.includes(want), `${msg}\n  gave ${got}\n  want …${want}…`);
}
assert.equal(plainProblem('steps.nope: no step has the id "nope"'), null, "a message already plain is left as it is");
console.log(`plainProblem: ${cases.length + 1} cases ok`);
