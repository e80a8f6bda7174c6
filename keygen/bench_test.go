package keygen

import (
	"testing"
	"time"
)

// BenchmarkGenerateKeyPair is the cost of one X25519 key pair from crypto/rand.
func BenchmarkGenerateKeyPair(b *testing.B) {
	for b.Loop() {
		if _, err := GenerateKeyPair(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewCertificate is one certificate as flux-keygen makes it: key pair and metadata.
func BenchmarkNewCertificate(b *testing.B) {
	opts := Options{Name: "flux-sample", Hostname: "flux-sample-keygen", Time: time.Now(), Version: "1.2.3"}
	for b.Loop() {
		if _, err := New(opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncode is the file encoding of one certificate.
func BenchmarkEncode(b *testing.B) {
	c, err := New(Options{Name: "flux-sample", Hostname: "flux-sample-keygen", Time: time.Now(), Version: "1.2.3"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse is reading one certificate back, including the key-pair check.
func BenchmarkParse(b *testing.B) {
	c, _ := New(Options{Name: "flux-sample", Hostname: "flux-sample-keygen", Time: time.Now()})
	data, _ := c.Encode()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
