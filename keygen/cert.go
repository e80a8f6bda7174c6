package keygen

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

const (
	// KeySize is the length of a CURVE public or secret key in bytes (ZeroMQ RFC 26).
	KeySize = 32
	// KeyTextSize is the length of a Z85-encoded key.
	KeyTextSize = 40
	// MaxLineLen is the longest line flux-core's reader takes whole: it reads with
	// fgets into 256 bytes, so 255 bytes before the newline.
	MaxLineLen = 255
)

// Meta is one metadata entry of a certificate.
type Meta struct {
	Key, Value string
}

// Cert is a CURVE certificate: a key pair and its metadata in file order.
type Cert struct {
	Public [KeySize]byte
	Secret [KeySize]byte
	Meta   []Meta
	// Generated, when set, is written in the comment header.
	Generated time.Time
}

// GenerateKeyPair returns a new certificate with a fresh X25519 key pair and no metadata.
func GenerateKeyPair() (*Cert, error) {
	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating X25519 key pair: %w", err)
	}
	c := &Cert{}
	copy(c.Secret[:], priv.Bytes())
	copy(c.Public[:], priv.PublicKey().Bytes())
	return c, nil
}

// FromSecret returns the certificate of a given secret key, its public key derived as
// libzmq's zmq_curve_public does. Tests use it to pin keys.
func FromSecret(secret [KeySize]byte) (*Cert, error) {
	pub, err := publicOf(secret)
	if err != nil {
		return nil, err
	}
	return &Cert{Public: pub, Secret: secret}, nil
}

func publicOf(secret [KeySize]byte) ([KeySize]byte, error) {
	var pub [KeySize]byte
	priv, err := ecdh.X25519().NewPrivateKey(secret[:])
	if err != nil {
		return pub, fmt.Errorf("deriving the public key: %w", err)
	}
	copy(pub[:], priv.PublicKey().Bytes())
	return pub, nil
}

// PublicText is the Z85 form of the public key.
func (c *Cert) PublicText() string { return mustZ85(c.Public[:]) }

// SecretText is the Z85 form of the secret key.
func (c *Cert) SecretText() string { return mustZ85(c.Secret[:]) }

func mustZ85(b []byte) string {
	s, err := Z85Encode(b)
	if err != nil {
		panic(err) // keys are 32 bytes, a multiple of 4
	}
	return s
}

// MetaValue returns the value of a metadata key.
func (c *Cert) MetaValue(key string) (string, bool) {
	for _, m := range c.Meta {
		if m.Key == key {
			return m.Value, true
		}
	}
	return "", false
}

// SetMetaDefault sets key to value unless the key already has a value: the first setting wins,
// as in `flux keygen`, so --name beats --meta name=... and both beat the defaults.
func (c *Cert) SetMetaDefault(key, value string) error {
	if err := ValidateMeta(key, value); err != nil {
		return err
	}
	if _, ok := c.MetaValue(key); !ok {
		c.Meta = append(c.Meta, Meta{Key: key, Value: value})
	}
	return nil
}

// Characters flux-core's reader accepts besides ASCII letters and digits.
const (
	metaKeyExtra   = "-."
	metaValueExtra = ".-:+=^!/*?&<>()[]{}@%$# \t"
)

func isAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// badChar returns the index of the first byte of s that is neither alphanumeric nor in extra, or -1.
func badChar(s, extra string) int {
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && strings.IndexByte(extra, s[i]) < 0 {
			return i
		}
	}
	return -1
}

// ValidateMeta reports whether flux-core's reader would accept `key = "value"` in the metadata
// section, naming the first character it would reject.
func ValidateMeta(key, value string) error {
	if key == "" {
		return fmt.Errorf("metadata key is empty (value %q)", value)
	}
	if i := badChar(key, metaKeyExtra); i >= 0 {
		return fmt.Errorf("metadata key %q: character %q is not allowed (flux accepts letters, digits, '.' and '-')", key, key[i])
	}
	if i := badChar(value, metaValueExtra); i >= 0 {
		return fmt.Errorf("metadata %s=%q: character %q is not allowed in a value (flux accepts letters, digits, space, tab and %s)",
			key, value, value[i], strings.TrimRight(metaValueExtra, " \t"))
	}
	if n := len(metaLine(key, value)); n > MaxLineLen {
		return fmt.Errorf("metadata %s=%q makes a %d-byte line; flux reads at most %d", key, value, n, MaxLineLen)
	}
	return nil
}

func metaLine(key, value string) string { return "    " + key + ` = "` + value + `"` }

// Encode returns the certificate file. It refuses metadata that flux-core's reader would reject.
func (c *Cert) Encode() ([]byte, error) {
	var b bytes.Buffer
	b.Grow(512)
	if !c.Generated.IsZero() {
		b.WriteString("#   ****  Generated on " + c.Generated.Format(time.DateTime) + " by flux-keygen (minicluster)  ****\n")
	}
	b.WriteString("#   ZeroMQ CURVE **Secret** Certificate\n#   DO NOT DISTRIBUTE\n\nmetadata\n")
	seen := make(map[string]bool, len(c.Meta))
	for _, m := range c.Meta {
		if err := ValidateMeta(m.Key, m.Value); err != nil {
			return nil, err
		}
		if seen[m.Key] {
			return nil, fmt.Errorf("metadata key %q appears twice; flux refuses duplicate keys", m.Key)
		}
		seen[m.Key] = true
		b.WriteString(metaLine(m.Key, m.Value) + "\n")
	}
	b.WriteString("curve\n")
	b.WriteString(`    public-key = "` + c.PublicText() + "\"\n")
	b.WriteString(`    secret-key = "` + c.SecretText() + "\"\n")
	return b.Bytes(), nil
}

// WriteFile writes the certificate to path with mode 0600 (flux refuses a certificate that
// group or others can read). It writes a temporary file next to path and renames it, so a
// reader never sees half a certificate and an existing file's looser mode is not kept.
// A path that exists and is not a regular file (/dev/stdout, a pipe) is written in place.
func (c *Cert) WriteFile(path string) error {
	data, err := c.Encode()
	if err != nil {
		return err
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return fmt.Errorf("writing certificate: %w", err)
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return fmt.Errorf("writing certificate: %w", err)
		}
		return f.Close()
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing certificate: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("writing certificate: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing certificate: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("writing certificate: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing certificate: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing certificate: %w", err)
	}
	return nil
}

// Options are the metadata of a new certificate, as `flux keygen` fills it in.
type Options struct {
	// Name is the "name" metadata the broker logs for a peer; default Hostname.
	Name string
	// Meta are extra entries; the first value of a key wins (as flux's --meta).
	Meta []Meta
	// Hostname, Time and UserID fill keygen.hostname, keygen.time and keygen.userid.
	Hostname string
	Time     time.Time
	UserID   int
	// Version is this program's version, written as keygen.minicluster-version.
	Version string
}

// New generates a key pair and fills the metadata as `flux keygen` does: name, keygen.hostname,
// keygen.time (local time, ISO 8601 without zone), keygen.userid. In place of flux's
// keygen.flux-core-version and keygen.zmq-version, which would be untrue here, it writes the
// versions of what did make the keys: keygen.go-version and keygen.minicluster-version.
// The broker reads only "name" (to log peers) and ignores the rest.
func New(opts Options) (*Cert, error) {
	c, err := GenerateKeyPair()
	if err != nil {
		return nil, err
	}
	c.Generated = opts.Time
	if opts.Name != "" {
		if err := c.SetMetaDefault("name", opts.Name); err != nil {
			return nil, err
		}
	}
	for _, m := range opts.Meta {
		if err := c.SetMetaDefault(m.Key, m.Value); err != nil {
			return nil, err
		}
	}
	defaults := []Meta{
		{"name", opts.Hostname},
		{"keygen.hostname", opts.Hostname},
		{"keygen.time", opts.Time.Format("2006-01-02T15:04:05")},
		{"keygen.userid", fmt.Sprint(opts.UserID)},
		{"keygen.go-version", runtime.Version()},
	}
	if opts.Version != "" {
		defaults = append(defaults, Meta{"keygen.minicluster-version", opts.Version})
	}
	for _, m := range defaults {
		if err := c.SetMetaDefault(m.Key, m.Value); err != nil {
			return nil, err
		}
	}
	return c, nil
}
