package fluxstandin

import (
	"bufio"
	"bytes"
	"crypto/ecdh"
	"fmt"
	"os"
	"strings"
)

// Cert is the key pair of a flux keygen CURVE certificate.
type Cert struct {
	Public, Secret []byte // 32 bytes each
}

// LoadCert reads a CURVE certificate the way a Flux broker does: the file must not be readable
// by group or others, and must hold a curve section whose public key matches its secret key.
func LoadCert(path string) (*Cert, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("curve certificate: %w", err)
	}
	if mode := st.Mode().Perm(); mode&0o044 != 0 {
		return nil, fmt.Errorf("curve certificate %s has mode %04o: readable by group/other, flux refuses it; chmod 0400 it", path, mode)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("curve certificate: %w", err)
	}
	c, err := parseCert(data)
	if err != nil {
		return nil, fmt.Errorf("curve certificate %s: %w", path, err)
	}
	return c, nil
}

// parseCert reads the ZPL text of flux keygen: "#" comments, unindented section names,
// indented `key = "value"` lines.
func parseCert(data []byte) (*Cert, error) {
	keys := map[string]string{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			section = trimmed
			continue
		}
		name, value, ok := strings.Cut(trimmed, "=")
		value = strings.TrimSpace(value)
		if !ok || len(value) < 2 || value[0] != '"' || value[len(value)-1] != '"' {
			return nil, fmt.Errorf("line %d %q is not `name = \"value\"`", n, trimmed)
		}
		keys[section+"/"+strings.TrimSpace(name)] = value[1 : len(value)-1]
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	pub, err := z85Key(keys, "curve/public-key")
	if err != nil {
		return nil, err
	}
	sec, err := z85Key(keys, "curve/secret-key")
	if err != nil {
		return nil, err
	}
	priv, err := ecdh.X25519().NewPrivateKey(sec)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(priv.PublicKey().Bytes(), pub) {
		return nil, fmt.Errorf("public-key does not match secret-key; make a new certificate with flux keygen")
	}
	return &Cert{Public: pub, Secret: sec}, nil
}

func z85Key(keys map[string]string, name string) ([]byte, error) {
	s, ok := keys[name]
	if !ok {
		return nil, fmt.Errorf("no %s; is this a flux keygen certificate?", name)
	}
	if len(s) != 40 {
		return nil, fmt.Errorf("%s is %d characters, want 40 (Z85 of 32 bytes)", name, len(s))
	}
	out, err := z85Decode(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

// z85Decode decodes ZeroMQ's Z85 (RFC 32): 5 characters per 4 bytes, big-endian.
func z85Decode(s string) ([]byte, error) {
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i+5 <= len(s); i += 5 {
		var v uint64
		for _, c := range []byte(s[i : i+5]) {
			d := strings.IndexByte(z85Alphabet, c)
			if d < 0 {
				return nil, fmt.Errorf("%q is not a Z85 character", c)
			}
			v = v*85 + uint64(d)
		}
		if v > 0xffffffff {
			return nil, fmt.Errorf("Z85 group %q overflows", s[i:i+5])
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return out, nil
}
