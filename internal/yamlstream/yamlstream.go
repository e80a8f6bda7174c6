// Package yamlstream cuts a YAML stream (what `helm template` and post-renderers read and write)
// at its document separators, keeping every byte, so that joining the pieces gives the stream
// back. The post-renderer parses the pieces; the tests read them as text.
package yamlstream

import "strings"

// Segment is one piece of a stream: the separator line that opens it ("---\n"; empty for the
// text before the first separator) and the raw text up to the next separator.
type Segment struct {
	Sep  string
	Text string
}

// IsSeparator reports whether line (with its newline) is a document separator: "---" alone or
// followed by blanks or a comment.
func IsSeparator(line string) bool {
	if !strings.HasPrefix(line, "---") {
		return false
	}
	rest := strings.TrimRight(line[3:], "\r\n")
	if rest == "" {
		return true
	}
	if rest[0] != ' ' && rest[0] != '\t' {
		return false
	}
	rest = strings.TrimSpace(rest)
	return rest == "" || strings.HasPrefix(rest, "#")
}

// Split cuts in into segments; the first is the text before the first separator (often empty).
func Split(in string) []Segment {
	var segs []Segment
	cur := Segment{}
	var text strings.Builder
	for rest := in; rest != ""; {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		if IsSeparator(line) {
			cur.Text = text.String()
			text.Reset()
			segs = append(segs, cur)
			cur = Segment{Sep: line}
			continue
		}
		text.WriteString(line)
	}
	cur.Text = text.String()
	return append(segs, cur)
}

// Documents returns the text of the segments that hold more than blank and comment lines, in
// order.
func Documents(in string) []string {
	var docs []string
	for _, s := range Split(in) {
		for _, line := range strings.Split(s.Text, "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
				docs = append(docs, s.Text)
				break
			}
		}
	}
	return docs
}
