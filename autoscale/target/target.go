// Package target is what the autoscaler (in the lead broker's container) and the lead's keys
// container (which holds the pod's Kubernetes credentials) say to each other through the
// directory they share: the size asked for, and the Job's size now.
package target

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The files of the shared directory.
const (
	// File holds a Target, written by the autoscaler for the keys container to apply.
	File = "target.json"
	// SizeFile holds the Job's parallelism, written by the keys container.
	SizeFile = "size"
)

// Target is a resize asked of the keys container. Each Seq is applied once, so that a target
// already applied never undoes a later helm upgrade.
type Target struct {
	Seq    int64  `json:"seq"`
	From   int    `json:"from"`
	Size   int    `json:"size"`
	Reason string `json:"reason"`
}

// Write replaces dir's target with t.
func Write(dir string, t Target) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return replace(filepath.Join(dir, File), b)
}

// Read reads dir's target; ok is false when there is none or it cannot be read.
func Read(dir string) (t Target, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil || json.Unmarshal(b, &t) != nil {
		return t, false
	}
	return t, true
}

// WriteSize records the Job's size in dir.
func WriteSize(dir string, size int) error {
	return replace(filepath.Join(dir, SizeFile), []byte(strconv.Itoa(size)+"\n"))
}

// ReadSize reads the Job's size from dir (0: not written yet).
func ReadSize(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, SizeFile))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// replace writes path at once: a reader never sees half of it.
func replace(path string, b []byte) error {
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}
