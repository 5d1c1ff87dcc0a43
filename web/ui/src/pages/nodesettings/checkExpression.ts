// checkExpression catches slips as you type (an empty expression, an
// unclosed bracket or string, a trailing operator). The server's compile
// is the truth: names and types are checked when the flow is saved.
export function checkExpression(src: string, empty = "Write an expression that is true or false, e.g. output.score > 50."): string | null {
  const s = src.trim();
  if (!s) return empty;
  const stack: string[] = [];
  const pairs: Record<string, string> = { ")": "(", "]": "[", "}": "{" };
  let quote = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      if (c === "\\" && quote !== "`") i++;
      else if (c === quote) quote = "";
      continue;
    }
    if (c === '"' || c === "'" || c === "`") quote = c;
    else if (c === "(" || c === "[" || c === "{") stack.push(c);
    else if (c in pairs) {
      if (stack.pop() !== pairs[c]) return `“${c}” at column ${i + 1} closes nothing.`;
    } else if (c === "=" && !/let\s/.test(s)) {
      const prev = s[i - 1] ?? "";
      const next = s[i + 1] ?? "";
      if (next === "=") i++;
      else if (!"=!<>".includes(prev)) return `Compare with == (a single = at column ${i + 1}).`;
    }
  }
  if (quote) return "A string is not closed.";
  if (stack.length) return `“${stack[stack.length - 1]}” is not closed.`;
  if (/(&&|\|\||[+\-*/%<>=!.,]|\b(and|or|not|in|matches|contains)\b)$/.test(s)) return "The expression ends with an operator.";
  return null;
}
