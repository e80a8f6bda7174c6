package fluxstandin

import (
	"fmt"
	"os"

	"github.com/minicluster/minicluster/keygen"
)

// LoadCert reads a CURVE certificate the way a Flux broker does: the file must not be readable
// by group or others, and it must parse with flux-core's reader rules (keygen.Parse), which
// include that the public key matches the secret key.
func LoadCert(path string) (*keygen.Cert, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("curve certificate: %w", err)
	}
	if mode := st.Mode().Perm(); mode&0o044 != 0 {
		return nil, fmt.Errorf("curve certificate %s has mode %04o: readable by group/other, flux refuses it; chmod 0400 it", path, mode)
	}
	c, err := keygen.ParseFile(path)
	if err != nil {
		return nil, fmt.Errorf("curve certificate %s: %w", path, err)
	}
	return c, nil
}
