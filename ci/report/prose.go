package main

import (
	"fmt"
	"regexp"
	"strings"
)

// The report's prose says where the time goes; its figures are the tables', from the results.
// A figure written into the prose by hand has no result behind it and goes stale unseen, so
// the template may hold none: proseFigures finds them. A setting (a Kubernetes default, a size
// the benchmark sends) is no measurement: the template writes it {{ setting "TEXT" "WHY" }}.

// figurePatterns are what reads as a measured quantity: a number with a unit of time, size,
// rate or ratio, and the words that say a time without digits.
var figurePatterns = []*regexp.Regexp{
	regexp.MustCompile(`\d+(?:[.,]\d+)?(?:\s*[–-]\s*\d+(?:[.,]\d+)?)?\s*(?:%|(?:ns|µs|us|ms|s|sec|seconds?|min|minutes?|hours?|[KMGT]i?B|bytes?|jobs/s|x)\b)`),
	regexp.MustCompile(`\d+(?:[.,]\d+)?\s+\w+\s+(?:a|per)\s+(?:second|minute)\b`),
	regexp.MustCompile(`(?i)\b(?:tenths?|hundredths?|fraction|half)\s+(?:of\s+)?a\s+second\b`),
	regexp.MustCompile(`(?i)\b(?:under|within|in|about)\s+a\s+(?:second|minute)\b`),
	regexp.MustCompile(`(?i)\b(?:one|two|three|four|five|six|seven|eight|nine|ten|a few|several)\s+(?:milliseconds|seconds|minutes)\b`),
	regexp.MustCompile(`(?i)\b(?:\w+|\d+)\s+times\s+(?:faster|slower|as\s+fast)\b`),
}

// actions are the template's {{ ... }}: tables and settings, not prose.
var actions = regexp.MustCompile(`(?s)\{\{.*?\}\}`)

// proseFigures returns each figure in the template's prose as "LINE: the line".
func proseFigures(tmpl string) []string {
	prose := actions.ReplaceAllStringFunc(tmpl, func(a string) string {
		return strings.Repeat("\n", strings.Count(a, "\n")) // keep the line numbers
	})
	var found []string
	for i, line := range strings.Split(prose, "\n") {
		for _, re := range figurePatterns {
			if m := re.FindString(line); m != "" {
				found = append(found, fmt.Sprintf("%d: %q in %q", i+1, m, strings.TrimSpace(line)))
				break
			}
		}
	}
	return found
}

// setting writes a figure that is a setting, not a measurement, and why it is one.
func setting(text, why string) (string, error) {
	if strings.TrimSpace(why) == "" {
		return "", fmt.Errorf("setting %q: say what sets it ({{ setting \"TEXT\" \"WHY\" }})", text)
	}
	return text, nil
}
