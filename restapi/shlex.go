package restapi

import "strings"

// SplitCommand splits a command line into words as a POSIX shell does with quotes and
// backslashes (the reference uses Python's shlex.split); no expansion of any kind.
func SplitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, badRequest("field \"command\": unterminated ' quote")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, badRequest("field \"command\": unterminated \" quote")
			}
			inWord = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, badRequest("field \"command\": ends with a backslash")
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, badRequest("field \"command\" is required: the command line the job runs, e.g. \"hostname\"")
	}
	return words, nil
}
