// Records (--write) or checks (--check) which UI sources web/dist was built
// from. The hash covers every file under web/ui except node_modules: for each
// file in byte order of its relative path, "path\0sha256(content)\n", hashed
// with SHA-256. web/ui_test.go computes the same hash, so a committed build
// that does not match its sources fails `make test`.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const out = join(root, "..", "dist", "source-hash.txt");

function walk(dir, files) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "node_modules") continue;
    const p = join(dir, entry.name);
    if (entry.isDirectory()) walk(p, files);
    else if (entry.isFile()) files.push(relative(root, p).split(sep).join("/"));
  }
  return files;
}

export function sourceHash() {
  const files = walk(root, []).sort((a, b) => (Buffer.from(a) < Buffer.from(b) ? -1 : Buffer.from(a) > Buffer.from(b) ? 1 : 0));
  const h = createHash("sha256");
  for (const f of files) {
    const c = createHash("sha256").update(readFileSync(join(root, f))).digest("hex");
    h.update(`${f}\0${c}\n`);
  }
  return h.digest("hex");
}

const mode = process.argv[2];
const want = sourceHash();
if (mode === "--write") {
  writeFileSync(out, want + "\n");
} else if (mode === "--check") {
  const have = existsSync(out) ? readFileSync(out, "utf8").trim() : "";
  if (have !== want) {
    console.error("web/dist is stale: rebuild it with `make ui`");
    process.exit(1);
  }
} else {
  console.log(want);
}
