// Command doclint holds the project's documents to their sizes and their links to the files and
// headings they name, so that a newcomer's first pages stay short and no link leads nowhere, and
// every make target to its one line of help (make help lists them). make lint runs it from the
// repository's root.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The limits: the README is read in five minutes, a page of docs/ holds one subject, and the
// chart's values table is on Artifact Hub's first screen.
const (
	readmeMax      = 250
	pageMax        = 400
	valuesTableMax = 80
	valuesHeader   = "| key | default | description |"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	if problems := check(*root); len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "doclint:", p)
		}
		os.Exit(1)
	}
}

// check returns every problem found, each naming the file and what to do.
func check(root string) []string {
	var problems []string
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files := append([]string{filepath.Join(root, "README.md")}, docs...)
	files = append(files, filepath.Join(root, "charts", "minicluster", "README.md"))
	for _, f := range files {
		lines, err := readLines(f)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		rel, _ := filepath.Rel(root, f)
		switch {
		case rel == "README.md" && len(lines) > readmeMax:
			problems = append(problems, fmt.Sprintf("%s has %d lines, more than %d: move the details to a page of docs/ and link it", rel, len(lines), readmeMax))
		case filepath.Dir(rel) == "docs" && len(lines) > pageMax:
			problems = append(problems, fmt.Sprintf("%s has %d lines, more than %d: split it into pages of one subject each", rel, len(lines), pageMax))
		case strings.HasPrefix(rel, "charts"):
			if at := indexOf(lines, valuesHeader); at < 0 || at >= valuesTableMax {
				problems = append(problems, fmt.Sprintf("%s: the values table (%q) must start within its first %d lines, found at %d: shorten what comes before it in README.md.gotmpl", rel, valuesHeader, valuesTableMax, at+1))
			}
		}
		problems = append(problems, brokenLinks(f, rel, lines)...)
	}
	return append(problems, undocumentedTargets(filepath.Join(root, "Makefile"))...)
}

// undocumentedTargets names the targets of the Makefile's .PHONY lines whose rule has no
// "## what it does" for make help.
func undocumentedTargets(makefile string) []string {
	lines, err := readLines(makefile)
	if err != nil {
		return []string{err.Error()}
	}
	var phony []string
	rules := map[string]string{}
	for _, l := range lines {
		if names, ok := strings.CutPrefix(l, ".PHONY:"); ok {
			phony = append(phony, strings.Fields(names)...)
		} else if name, rest, ok := strings.Cut(l, ":"); ok && target.MatchString(name) && !strings.HasPrefix(rest, "=") {
			if _, seen := rules[name]; !seen || strings.Contains(rest, "## ") {
				rules[name] = rest
			}
		}
	}
	var problems []string
	for _, name := range phony {
		rest, ok := rules[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("Makefile: %s is in .PHONY but has no rule", name))
		case !strings.Contains(rest, "## "):
			problems = append(problems, fmt.Sprintf("Makefile: target %s has no \"## what it does\" on its rule line, which make help lists", name))
		}
	}
	return problems
}

var target = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

func readLines(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"), nil
}

func indexOf(lines []string, s string) int {
	for i, l := range lines {
		if strings.TrimSpace(l) == s {
			return i
		}
	}
	return -1
}

// link is a Markdown link's target: ](target) or ](target "title").
var link = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// brokenLinks names the relative links of a file whose file, or whose #heading, is missing.
// Links to the web are not followed.
func brokenLinks(path, rel string, lines []string) []string {
	var problems []string
	inFence := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
		}
		if inFence {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(l, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := path
			if file != "" {
				dest = filepath.Join(filepath.Dir(path), file)
			}
			if _, err := os.Stat(dest); err != nil {
				problems = append(problems, fmt.Sprintf("%s:%d: link to %s: no such file", rel, i+1, target))
				continue
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if ok, err := hasHeading(dest, anchor); err != nil || !ok {
				problems = append(problems, fmt.Sprintf("%s:%d: link to %s: no heading with that anchor", rel, i+1, target))
			}
		}
	}
	return problems
}

// hasHeading says whether a Markdown file has a heading whose GitHub anchor is anchor.
func hasHeading(path, anchor string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	inFence := false
	for s.Scan() {
		l := s.Text()
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
		}
		if !inFence && strings.HasPrefix(l, "#") && slug(strings.TrimLeft(l, "#")) == anchor {
			return true, nil
		}
	}
	return false, s.Err()
}

// slug is GitHub's anchor of a heading: lower case, spaces to hyphens, punctuation dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}
