// plainProblem says a compiler's or validator's technical message (from
// expr-lang or a JSON Schema check) in words a process owner reads; the
// technical message is kept to be shown underneath. null: no plain
// wording is known, show the message as it is.

const TYPE_WORDS: Record<string, string> = {
  int: "a number",
  int64: "a number",
  float64: "a number",
  float: "a number",
  number: "a number",
  integer: "a whole number",
  string: "text",
  bool: "true or false",
  boolean: "true or false",
  nil: "nothing (nil)",
  null: "nothing (null)",
  object: "an object",
  array: "a list",
  "map[string]interface {}": "an object",
  "[]interface {}": "a list",
  "interface {}": "a value",
};

const typeWord = (t: string) => TYPE_WORDS[t.trim()] ?? (t.startsWith("map[") ? "an object" : t.startsWith("[]") ? "a list" : t);

// column reads expr-lang's "(line:column)" position.
function position(msg: string): { line: number; col: number } | null {
  const m = /\((\d+):(\d+)\)/.exec(msg);
  return m ? { line: Number(m[1]), col: Number(m[2]) } : null;
}

function unquote(s: string): string {
  return s.replace(/^['"]|['"]$/g, "");
}

const RULES: [RegExp, (m: RegExpExecArray, msg: string, src?: string) => string][] = [
  // expr-lang: syntax
  [
    /unexpected token EOF|unexpected end of expression/,
    (_m, msg, src) => {
      const p = position(msg);
      const before = src ? src.trim().slice(-24) : "";
      return `The expression ends too early — something is missing ${before ? `after “${before}”` : p ? `at column ${p.col}` : "at its end"}.`;
    },
  ],
  [/unexpected token \w+\("(.*?)"\)/, (m, msg) => `“${m[1]}” is not expected here${position(msg) ? ` (column ${position(msg)!.col})` : ""}: check what comes before it.`],
  [/literal not terminated/, () => "A piece of text is not closed: add its closing quote."],
  [/unclosed "(.)"/, (m) => `“${m[1]}” is opened but never closed.`],
  [/unexpected "(.)"/, (m) => `“${m[1]}” closes nothing: remove it or open it earlier.`],
  // expr-lang: names and types
  [/unknown name (\S+?)(?: \(|$|\s)/, (m) => `“${m[1]}” is not a name an expression knows here. It may read input, run.input, entity, steps.<id>.output, vars.<name> (and output in a condition).`],
  [/(?:unknown func|undefined: )(\S+?)(?: \(|$|\s)/, (m) => `There is no function “${m[1]}”.`],
  [/expected bool, but got (?:the result of "?(.+?)"?(?: \(|$)|(\S+))/, (m) => `A condition must be true or false, but this gives ${m[2] ? typeWord(m[2]) : `a number or text (the result of ${m[1]})`}.`],
  [/invalid operation: (\S+) \(mismatched types (.+?) and (.+?)\)/, (m) => `“${m[1]}” cannot be used between ${typeWord(m[2])} and ${typeWord(m[3])}.`],
  [/cannot fetch (\S+) from (.+?)(?: \(|$)/, (m) => `There is no field “${unquote(m[1])}” in ${typeWord(m[2])}.`],
  [/cannot use (.+?) as argument \(type (.+?)\) to call (\S+)/, (m) => `${m[3]} cannot take ${typeWord(m[1])}: it wants ${typeWord(m[2])}.`],
  [/not enough arguments to call (\S+)/, (m) => `${m[1]}(…) needs more arguments.`],
  [/too many arguments to call (\S+)/, (m) => `${m[1]}(…) is given too many arguments.`],
  [/index out of range/, () => "The list has no item at that position."],
  [/memory budget exceeded|operations budget|timed out/, () => "The expression does too much work (or runs too long) and was stopped."],
  // JSON Schema (forms, node settings)
  [
    /fits none of the alternatives: (.*)/,
    (m) =>
      `The value fits none of the accepted forms; fixing any one is enough: ${m[1]
        .split(/;? ?\((\d+)\) /)
        .filter((x) => x && !/^\d+$/.test(x))
        .map((alt, i) => `(${i + 1}) ${plainProblem(alt.replace(/^at (\S+): /, "")) ?? alt}`)
        .join(" ")}`,
  ],
  [/missing properties (.+)/, (m) => `These must be filled in: ${m[1].replace(/'/g, "")}.`],
  [/missing property '?([^']+)'?/, (m) => `“${m[1]}” must be filled in.`],
  [/additional properties (.+) not allowed/, (m) => `${m[1].replace(/'/g, "")} ${m[1].includes(",") ? "are" : "is"} not allowed here.`],
  [/value must be one of (.+)/, (m) => `Choose one of ${m[1]}.`],
  [/value must be (.+)/, (m) => `The value must be ${m[1]}.`],
  [/minimum: got (\S+), want (\S+)/, (m) => `At least ${m[2]} (this is ${m[1]}).`],
  [/maximum: got (\S+), want (\S+)/, (m) => `At most ${m[2]} (this is ${m[1]}).`],
  [/minLength: got (\d+), want (\d+)/, (m) => `At least ${m[2]} characters (this has ${m[1]}).`],
  [/maxLength: got (\d+), want (\d+)/, (m) => `At most ${m[2]} characters (this has ${m[1]}).`],
  [/minItems: got (\d+), want (\d+)/, (m) => `At least ${m[2]} items (this has ${m[1]}).`],
  [/maxItems: got (\d+), want (\d+)/, (m) => `At most ${m[2]} items (this has ${m[1]}).`],
  [/got (\w+), want (.+)$/, (m) => `${typeWord(m[2]).replace(/^./, (c) => c.toUpperCase())} is expected here, not ${typeWord(m[1])}.`],
  [/(.+) does not match pattern (.+)/, (m) => `${m[1]} does not have the expected form (${m[2]}).`],
  [/not valid JSON|invalid character .* looking for/, () => "This is not valid JSON: check quotes, commas and brackets."],
];

// plainProblem answers the plain wording of msg, or null. src: the
// expression the message is about, when known.
export function plainProblem(msg: string, src?: string): string | null {
  const first = msg.split("\n")[0];
  for (const [re, say] of RULES) {
    const m = re.exec(first);
    if (m) return say(m, first, src);
  }
  return null;
}
