package keygen

import (
	"fmt"
	"strings"
)

// z85Alphabet is the character set of ZeroMQ RFC 32 (Z85), in digit order.
const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

// z85Digit maps a byte to its Z85 digit value, or 0xFF when the byte is not in the alphabet.
var z85Digit = func() [256]byte {
	var t [256]byte
	for i := range t {
		t[i] = 0xFF
	}
	for i := 0; i < len(z85Alphabet); i++ {
		t[z85Alphabet[i]] = byte(i)
	}
	return t
}()

// Z85Encode encodes data whose length is a multiple of 4 (RFC 32 defines no padding).
func Z85Encode(data []byte) (string, error) {
	if len(data)%4 != 0 {
		return "", fmt.Errorf("z85: input length %d is not a multiple of 4", len(data))
	}
	var b strings.Builder
	b.Grow(len(data) / 4 * 5)
	var chunk [5]byte
	for i := 0; i < len(data); i += 4 {
		v := uint32(data[i])<<24 | uint32(data[i+1])<<16 | uint32(data[i+2])<<8 | uint32(data[i+3])
		for j := 4; j >= 0; j-- {
			chunk[j] = z85Alphabet[v%85]
			v /= 85
		}
		b.Write(chunk[:])
	}
	return b.String(), nil
}

// Z85Decode decodes a Z85 string whose length is a multiple of 5. Like libzmq it rejects
// characters outside the alphabet and 5-character groups whose value overflows 32 bits.
func Z85Decode(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("z85: length %d is not a multiple of 5", len(s))
	}
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for j := 0; j < 5; j++ {
			d := z85Digit[s[i+j]]
			if d == 0xFF {
				return nil, fmt.Errorf("z85: invalid character %q at offset %d", s[i+j], i+j)
			}
			v = v*85 + uint64(d)
		}
		if v > 0xFFFFFFFF {
			return nil, fmt.Errorf("z85: group %q at offset %d exceeds 32 bits", s[i:i+5], i)
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return out, nil
}
