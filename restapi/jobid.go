package restapi

import (
	"fmt"
	"strconv"
	"strings"
)

// Flux's FLUID text forms (RFC 19): f58 (base58 with Flux's alphabet, prefixed "ƒ", or "f"
// in ASCII), decimal, and 0x hexadecimal. The API prints f58 with "ƒ", as flux does.
const f58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// EncodeF58 is id in Flux's f58 form.
func EncodeF58(id uint64) string {
	if id == 0 {
		return "ƒ1"
	}
	var b []byte
	for id > 0 {
		b = append(b, f58Alphabet[id%58])
		id /= 58
	}
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return "ƒ" + string(b)
}

// ParseJobID reads a job id in any of the forms above.
func ParseJobID(s string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty job id")
	}
	switch {
	case strings.HasPrefix(s, "ƒ"), strings.HasPrefix(s, "f"):
		// One prefix, "ƒ" or else "f": the digits may begin with an f of their own (ƒfBHSL8P).
		digits, found := strings.CutPrefix(s, "ƒ")
		if !found {
			digits = s[1:]
		}
		if digits == "" || len(digits) > 11 {
			return 0, fmt.Errorf("%q is not a Flux job id", s)
		}
		var id uint64
		for _, c := range digits {
			d := strings.IndexRune(f58Alphabet, c)
			if d < 0 {
				return 0, fmt.Errorf("%q is not a Flux job id: %q is not an f58 digit", s, c)
			}
			next := id*58 + uint64(d)
			if next/58 != id {
				return 0, fmt.Errorf("%q is not a Flux job id: too large", s)
			}
			id = next
		}
		return id, nil
	case strings.HasPrefix(s, "0x"):
		id, err := strconv.ParseUint(s[2:], 16, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a Flux job id", s)
		}
		return id, nil
	default:
		id, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a Flux job id (want f58 such as ƒ2Jq, or decimal)", s)
		}
		return id, nil
	}
}
