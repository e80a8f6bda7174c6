package supervisor

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The helpers beside the broker (the keys container; the copy of the view) start with the
// broker's container, each with a directory (Settings.Helpers). Each makes the FIFO .alive
// there and ends when no one holds it open: this program holds it for as long as it lives,
// first, so that no way out of it leaves a helper running. Then it waits for each one's
// .ready; .invalid (a broken key: the broker cannot start) or .failed ends the container.
// .ended, written on the way out in the keys volume (the one this container may write and
// every helper sees), tells a helper that opened its FIFO too late. Signals: a SIGTERM while it
// waits ends the container (143): nothing has started yet.

// waitForHelpers holds every helper's FIFO (kept in s.held until this program exits) and
// waits until each helper is ready.
func (s *Supervisor) waitForHelpers() error {
	s.helpersHeld = true
	for _, dir := range s.S.Helpers {
		alive, failed := filepath.Join(dir, ".alive"), filepath.Join(dir, ".failed")
		for !isFIFO(alive) && !exists(failed) {
			if err := s.pause(); err != nil {
				return err
			}
		}
		if isFIFO(alive) {
			// Read and write: the open returns at once, whoever else holds it.
			f, err := os.OpenFile(alive, os.O_RDWR, 0)
			if err != nil {
				return s.fail(1, "holding %s: %v", alive, err)
			}
			s.held = append(s.held, f)
		}
	}
	for _, dir := range s.S.Helpers {
		waited := 0
		for !exists(filepath.Join(dir, ".ready")) {
			if b, err := os.ReadFile(filepath.Join(dir, ".invalid")); err == nil {
				return s.die("%s", strings.TrimRight(string(b), "\n"))
			}
			if b, err := os.ReadFile(filepath.Join(dir, ".failed")); err == nil {
				return s.fail(1, "%s", strings.TrimRight(string(b), "\n"))
			}
			// Every twentieth of a second for the first second, then every fifth: a pod's
			// keys may take several seconds on a busy node.
			waited++
			step := 50 * time.Millisecond
			if waited > 20 {
				step = 200 * time.Millisecond
			}
			if err := s.sleep(step); err != nil {
				return err
			}
		}
	}
	return nil
}

// helpersEnded tells the helpers that this container has ended (.ended in the keys volume).
func (s *Supervisor) helpersEnded() {
	if !s.helpersHeld {
		return
	}
	if f, err := os.OpenFile(filepath.Join(s.P.Keys, ".ended"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o666); err == nil {
		f.Close()
	}
}

// installPrivate copies src to dest, readable by this user alone (mode 0400).
func installPrivate(src, dest string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.Remove(dest); err != nil && !os.IsNotExist(err) {
		return err
	}
	out, err := os.OpenFile(dest, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o400)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(0o400); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// installKeys: the keys container hands the keys over readable by every user of the pod (it
// cannot know which user runs Flux). Install private copies, owned by the user running Flux
// (Flux refuses a certificate that group or others can read; a munge key others can read lets
// them pass for any user), and on the lead the API's credentials and TLS key; then tell the
// keys container (.installed), which deletes the copies everyone could read.
func (s *Supervisor) installKeys() error {
	keys := s.P.Keys
	if err := installPrivate(filepath.Join(keys, "curve.cert"), s.S.CurveCert); err != nil {
		return s.fail(1, "installing the curve certificate: %v", err)
	}
	if exists(filepath.Join(keys, "munge.key")) {
		if err := installPrivate(filepath.Join(keys, "munge.key"), s.P.MungeKey); err != nil {
			return s.fail(1, "installing the munge key: %v", err)
		}
	}
	if isDir(filepath.Join(keys, "api")) {
		for _, f := range []string{"user", "token", "secret-key", "tls.crt", "tls.key"} {
			src := filepath.Join(keys, "api", f)
			if !exists(src) {
				continue
			}
			dir := filepath.Join(s.P.API, "credentials")
			if strings.HasPrefix(f, "tls.") {
				dir = filepath.Join(s.P.API, "tls")
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return s.fail(1, "installing the API's %s: %v", f, err)
			}
			if err := os.Chmod(dir, 0o700); err != nil {
				return s.fail(1, "installing the API's %s: %v", f, err)
			}
			if err := installPrivate(src, filepath.Join(dir, f)); err != nil {
				return s.fail(1, "installing the API's %s: %v", f, err)
			}
		}
	}
	if err := touch(filepath.Join(keys, ".installed")); err != nil {
		return s.fail(1, "telling the keys container: %v", err)
	}
	return nil
}

// ids is the id list of n things: 0, or 0-(n-1).
func ids(n int) string {
	if n == 1 {
		return "0"
	}
	return "0-" + strconv.Itoa(n-1)
}

// rEncodeArgs are flux R encode's arguments: every host of the list, each with cores cores
// and gpus GPUs where the pod's limits (or values) say so, or else what hwloc sees on this
// node (nproc: the CPUs this process may use, when only GPUs are given).
func rEncodeArgs(hosts string, cores, gpus, nproc int) []string {
	if gpus > 0 && cores == 0 {
		cores = nproc
	}
	args := []string{"--hosts=" + hosts}
	if cores > 0 {
		args = append(args, "--cores="+ids(cores))
	} else {
		args = append(args, "--local")
	}
	if gpus > 0 {
		args = append(args, "--gpus="+ids(gpus))
	}
	return args
}

// encodeResources writes R, the resources of all maxSize hosts (brokers that are not up are
// shown as down).
func (s *Supervisor) encodeResources() error {
	args := rEncodeArgs(s.hosts, s.S.Cores, s.S.GPUs, nproc())
	out, err := os.OpenFile(s.S.ResourcePath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o666)
	if err != nil {
		return s.fail(1, "writing R: %v", err)
	}
	defer out.Close()
	cmd := s.flux(append([]string{"R", "encode"}, args...)...)
	cmd.Stdout = out
	if s.procs.Run(cmd) != 0 {
		return s.die("flux R encode %s failed: Flux cannot run in this image (see above)", strings.Join(args, " "))
	}
	return nil
}

// nproc is the number of CPUs this process may run on, as nproc(1) says.
func nproc() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 1
	}
	return max(set.Count(), 1)
}

// exists says whether path exists (as test -e).
func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// isFIFO says whether path is a FIFO (as test -p).
func isFIFO(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&os.ModeNamedPipe != 0
}

// isDir says whether path is a directory (as test -d).
func isDir(path string) bool { fi, err := os.Stat(path); return err == nil && fi.IsDir() }

// isFile says whether path is a regular file (as test -f).
func isFile(path string) bool { fi, err := os.Stat(path); return err == nil && fi.Mode().IsRegular() }

// notEmpty says whether path is a file with something in it (as test -s).
func notEmpty(path string) bool { fi, err := os.Stat(path); return err == nil && fi.Size() > 0 }

// touch makes path an empty file (as : > path).
func touch(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o666)
	if err != nil {
		return err
	}
	return f.Close()
}
