package restapi

import "testing"

func TestJobIDForms(t *testing.T) {
	// ƒ2 = 1, and the f58 digits skip 0, O, I and l, as Flux's do.
	// 1453359890432 is ƒfBHSL8P: the f is a digit.
	for _, id := range []uint64{0, 1, 57, 58, 123456789, 1 << 40, 1453359890432, ^uint64(0)} {
		s := EncodeF58(id)
		for _, form := range []string{s, "f" + s[len("ƒ"):]} {
			got, err := ParseJobID(form)
			if err != nil || got != id {
				t.Errorf("ParseJobID(%q) = %d, %v; want %d", form, got, err, id)
			}
		}
	}
	for _, form := range []string{"ƒfBHSL8P", "ffBHSL8P"} {
		if got, err := ParseJobID(form); err != nil || got != 1453359890432 {
			t.Errorf("ParseJobID(%q) = %d, %v; want 1453359890432 (one prefix, then digits that begin with f)", form, got, err)
		}
	}
	if EncodeF58(1) != "ƒ2" || EncodeF58(58) != "ƒ21" {
		t.Errorf("EncodeF58(1), (58) = %q, %q", EncodeF58(1), EncodeF58(58))
	}
	for in, want := range map[string]uint64{"42": 42, "0x2a": 42} {
		if got, err := ParseJobID(in); err != nil || got != want {
			t.Errorf("ParseJobID(%q) = %d, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "ƒ", "f0", "fOl", "nope", "-1", "0xzz", "ƒ" + "zzzzzzzzzzzz", "12ab"} {
		if _, err := ParseJobID(bad); err == nil {
			t.Errorf("ParseJobID(%q) accepted", bad)
		}
	}
}
