package archtest

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// skipDirs are not walked: what git ignores or others build (web/dist,
// node_modules), and testdata, whose files are fixtures.
var skipDirs = []string{".git", "node_modules", "web/dist", "bin", "tmp", "bench-results", "test-artifacts", "testdata"}

// self is this file, whose fixtures' names are not references.
const self = "internal/archtest/doclinks_test.go"

// codeExts are the files whose mentions of a repository doc are checked
// (comments and strings alike), besides the Makefile.
var codeExts = []string{".go", ".ts", ".tsx", ".mjs", ".sql", ".yaml", ".yml"}

var (
	// mdLink is an inline link or image: [text](target) or [text](target "title").
	mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// mdRefDef is a reference-style link's definition: [name]: target.
	mdRefDef = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	// codeSpan is inline code, whose text is not a link.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	// heading is an ATX heading.
	heading = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	// htmlAnchor is an explicit anchor: <a id="x"> or <a name="x">.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	// docMention is a repository doc named in code: README.md,
	// docs/architecture.md#where-things-live. A path after a slash (a URL's) is not one.
	docMention = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./-])((?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_-][A-Za-z0-9_.-]*\.md)(#[A-Za-z0-9_-]+)?\b`)
	// mdLinkInHeading is a link in a heading, which keeps its text.
	mdLinkInHeading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// checkDocLinks walks the repository at root and returns a line for
// each broken reference to a file in it: a relative link of a markdown
// file to a path that does not exist or an anchor its target has not,
// and a doc named in code (relative to the root) that does not exist.
func checkDocLinks(root string) ([]docProblem, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("error opening %s: %w", root, err)
	}
	defer r.Close()
	fsys := r.FS()
	var problems []docProblem
	anchors := map[string][]string{} // a markdown file → its anchors, read once
	anchorsOf := func(rel string) ([]string, error) {
		if a, ok := anchors[rel]; ok {
			return a, nil
		}
		b, err := fs.ReadFile(fsys, rel)
		if err != nil {
			return nil, fmt.Errorf("error reading %s: %w", rel, err)
		}
		anchors[rel] = markdownAnchors(string(b))
		return anchors[rel], nil
	}
	// check reports target (a path relative to the root, cleaned, and an
	// anchor or "") as a problem of file:line when it leads nowhere.
	check := func(file string, line int, shown, target, anchor string) error {
		if target == "" || target == "." || strings.HasPrefix(target, "../") {
			problems = append(problems, docProblem{file, line, shown, "leads outside the repository"})
			return nil
		}
		st, err := fs.Stat(fsys, target)
		if errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, docProblem{file, line, shown, target + " does not exist"})
			return nil
		}
		if err != nil {
			return fmt.Errorf("error reading %s: %w", target, err)
		}
		if anchor == "" || st.IsDir() || !strings.HasSuffix(target, ".md") {
			return nil
		}
		have, err := anchorsOf(target)
		if err != nil {
			return err
		}
		if !slices.Contains(have, anchor) {
			problems = append(problems, docProblem{file, line, shown, target + " has no heading #" + anchor})
		}
		return nil
	}

	err = fs.WalkDir(fsys, ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			for _, s := range skipDirs {
				if rel == s || strings.HasSuffix(rel, "/"+s) {
					return fs.SkipDir
				}
			}
			return nil
		}
		isMarkdown := strings.HasSuffix(rel, ".md")
		if rel == self || !isMarkdown && !slices.Contains(codeExts, path.Ext(rel)) && path.Base(rel) != "Makefile" {
			return nil
		}
		b, err := fs.ReadFile(fsys, rel)
		if err != nil {
			return fmt.Errorf("error reading %s: %w", rel, err)
		}
		if isMarkdown {
			for _, l := range markdownLinks(string(b)) {
				target, anchor, ok := relativeTarget(l.target)
				if !ok {
					continue
				}
				if target == "" { // #anchor: this file's own
					target = rel
				} else {
					target = path.Join(path.Dir(rel), target)
				}
				if err := check(rel, l.line, l.target, target, anchor); err != nil {
					return err
				}
			}
			return nil
		}
		// Every mention has ".md" in it: a line without one is not matched
		// (the expression is slow, and most lines have none).
		if !strings.Contains(string(b), ".md") {
			return nil
		}
		for i, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, ".md") {
				continue
			}
			for _, m := range docMention.FindAllStringSubmatch(line, -1) {
				if err := check(rel, i+1, m[1]+m[2], path.Clean(m[1]), strings.TrimPrefix(m[2], "#")); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("error walking %s: %w", root, err)
	}
	return problems, nil
}

// docProblem is a broken reference: ref, at file:line, and why.
type docProblem struct {
	file string
	line int
	ref  string
	why  string
}

func (p docProblem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.file, p.line, p.ref, p.why)
}

type markdownLink struct {
	line   int
	target string
}

// markdownLinks are the links of a markdown document, but those in code
// (fenced blocks and code spans).
func markdownLinks(doc string) []markdownLink {
	var out []markdownLink
	fence := ""
	for i, line := range strings.Split(doc, "\n") {
		if f := fenceOf(line); f != "" {
			switch {
			case fence == "":
				fence = f
			case strings.HasPrefix(f, fence):
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			out = append(out, markdownLink{i + 1, m[1]})
		}
		if m := mdRefDef.FindStringSubmatch(line); m != nil {
			out = append(out, markdownLink{i + 1, m[1]})
		}
	}
	return out
}

// fenceOf is the fence a line opens or closes (``` or ~~~, as long as
// written), or "".
func fenceOf(line string) string {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return ""
	}
	for _, c := range []string{"`", "~"} {
		if strings.HasPrefix(t, c+c+c) {
			return t[:len(t)-len(strings.TrimLeft(t, c))]
		}
	}
	return ""
}

// relativeTarget splits a link's target into a path and an anchor; ok is
// false for a link that leaves the repository (a scheme: https:, mailto:)
// or names no file (an absolute path is the site's, not the repository's).
func relativeTarget(target string) (p, anchor string, ok bool) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "" || u.Host != "" || strings.HasPrefix(target, "/") {
		return "", "", false
	}
	return u.Path, u.Fragment, true
}

// markdownAnchors are the anchors GitHub gives a document's headings
// (lower case, spaces to hyphens, punctuation but - and _ dropped; a
// repeated one suffixed -1, -2, …) and its explicit <a id> anchors.
func markdownAnchors(doc string) []string {
	var out []string
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(doc, "\n") {
		if f := fenceOf(line); f != "" {
			switch {
			case fence == "":
				fence = f
			case strings.HasPrefix(f, fence):
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(mdLinkInHeading.ReplaceAllString(m[1], "$1"))
		if n := seen[s]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", s, n))
		} else {
			out = append(out, s)
		}
		seen[s]++
	}
	return out
}

func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_' || r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// pendingDocs are broken mentions to be fixed, each as the check reports
// it ("file: doc"). An entry that no longer matches a problem fails the
// test: fixed, it leaves this list.
var pendingDocs = []string{}

// TestDocLinks: every relative link of the repository's markdown leads to
// a file that exists (and to a heading it has), and every doc named in
// code exists.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	problems, err := checkDocLinks(repoRoot(t))
	require.NoError(t, err)
	pending := map[string]bool{}
	for _, p := range problems {
		if slices.Contains(pendingDocs, p.file+": "+p.ref) {
			pending[p.file+": "+p.ref] = true
			continue
		}
		t.Error(p)
	}
	for _, p := range pendingDocs {
		require.True(t, pending[p], "%s is no longer broken: remove it from pendingDocs", p)
	}
}

// TestDocLinksCatchesBrokenOnes: the check finds each kind of broken
// reference in a fixture, and none of its good ones (a test of the check
// itself: it must be able to fail).
func TestDocLinksCatchesBrokenOnes(t *testing.T) {
	t.Parallel()
	problems, err := checkDocLinks(filepath.Join("testdata", "doclinks"))
	require.NoError(t, err)
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	require.ElementsMatch(t, []string{
		"README.md:8: docs/missing.md: docs/missing.md does not exist",
		"README.md:9: docs/a.md#no-such-heading: docs/a.md has no heading #no-such-heading",
		"README.md:10: ../../outside.md: leads outside the repository",
		"README.md:18: docs/gone.md: docs/gone.md does not exist",
		"docs/a.md:7: #nowhere: docs/a.md has no heading #nowhere",
		"code.go:2: DESIGN.md: DESIGN.md does not exist",
		"code.go:2: docs/a.md#missing: docs/a.md has no heading #missing",
	}, got)
}
