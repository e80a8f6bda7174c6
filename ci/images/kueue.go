package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/minicluster/minicluster/internal/staticbuild"
)

// BuildKueue writes the Kueue image (kueue.tar) from dir, the output of ci/kueue/build.sh:
// bin/kueue (a static binary) as /manager, where Kueue's Deployment runs it, and the version
// (vX.Y.Z, its tag) from the file version. Nothing else is in it but /tmp and a passwd for the
// non-root user 65532, as in Kueue's own (distroless) image.
func BuildKueue(cfg Config, dir string) ([]Written, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "version"))
	if err != nil {
		return nil, fmt.Errorf("kueue: %w (bash ci/kueue/build.sh builds it)", err)
	}
	tag := strings.TrimSpace(string(raw))
	bin := filepath.Join(dir, "bin", "kueue")
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("kueue: %w (bash ci/kueue/build.sh builds it)", err)
	}
	if err := staticbuild.CheckStatic(bin, data, ""); err != nil {
		return nil, fmt.Errorf("kueue: %w", err)
	}
	img := image{
		ref: "localhost/minicluster/kueue:" + tag, file: "kueue.tar",
		config:      v1.Config{Entrypoint: []string{"/manager"}, User: "65532:65532"},
		description: "Kueue " + tag + " (sigs.k8s.io/kueue), built from source by ci/kueue/build.sh",
	}
	l, err := layer([]file{
		{path: "manager", mode: 0o755, data: data},
		{path: "tmp", mode: 0o1777, dir: true},
		{path: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{path: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
	})
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	cfg.Version = tag
	written, failed := writeInto(cfg, img, []v1.Layer{l}, nil, nil)
	if len(failed) > 0 {
		return nil, failed[0]
	}
	return written, nil
}
