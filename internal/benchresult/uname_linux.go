package benchresult

import (
	"strings"
	"syscall"
)

// kernel is `uname -srm`.
func kernel() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return "linux"
	}
	str := func(f [65]int8) string {
		var b strings.Builder
		for _, c := range f {
			if c == 0 {
				break
			}
			b.WriteByte(byte(c))
		}
		return b.String()
	}
	return str(u.Sysname) + " " + str(u.Release) + " " + str(u.Machine)
}
