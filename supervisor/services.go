package supervisor

import (
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The lead's services beside its broker: the API server (api.enabled) and the autoscaler with
// the metrics (autoscale.enabled, metrics.enabled). The keys container copied both programs into
// the keys volume. They live as long as this container and outlast the broker's restarts; one
// that ends is started again a second later. Signals: the kubelet's SIGTERM reaches this
// program alone; the services get theirs from stopServices when it ends, so that none
// outlives the container where the pod shares its process namespace.

// service is one program kept running.
type service struct {
	name string // for the log: "the API server"
	path string
	args []string
	env  []string // the environment when it was first started
	dir  string
}

// services are the lead's running services.
type services struct {
	mu       sync.Mutex
	stopping bool
	running  map[*Child]bool
}

// startAPI (api.enabled) serves the Flux RESTful API beside the lead's broker, through the
// flux the broker runs.
func (s *Supervisor) startAPI() error {
	if s.S.Index != 0 || s.S.APIPort == "" {
		return nil
	}
	args := []string{"--listen=:" + s.S.APIPort, "--flux=" + s.fluxCmd, "--stop-marker=" + s.P.apiStopped(), "--hosts=" + s.hosts}
	if s.S.APIAuth {
		if !isFile(filepath.Join(s.P.API, "credentials", "token")) {
			return s.die("the API's credentials were not handed over (api.requireAuth=true): see kubectl logs <lead pod> -c keys")
		}
		args = append(args, "--credentials="+filepath.Join(s.P.API, "credentials"), "--token-lifetime="+s.S.APITokenLifetime)
	} else {
		args = append(args, "--no-auth")
	}
	if s.S.APITLS {
		if !isFile(filepath.Join(s.P.API, "tls", "tls.key")) {
			return s.die("the API's TLS key was not handed over (api.tls.secretName): see kubectl logs <lead pod> -c keys")
		}
		args = append(args, "--tls-cert="+filepath.Join(s.P.API, "tls", "tls.crt"), "--tls-key="+filepath.Join(s.P.API, "tls", "tls.key"))
	}
	s.keepRunning(service{name: "the API server", path: filepath.Join(s.P.Keys, "minicluster-api"), args: args})
	return nil
}

// startAutoscale (autoscale.enabled, metrics.enabled) runs minicluster-autoscale beside the
// lead's broker. It sizes the MiniCluster by asking the keys container, which holds the pod's
// Kubernetes credentials, through the keys volume's autoscale directory, and serves the metrics.
func (s *Supervisor) startAutoscale() {
	if s.S.Index != 0 || s.S.Autoscale+s.S.MetricsPort == "" {
		return
	}
	args := []string{"--flux=" + s.fluxCmd, "--script=" + filepath.Join(s.P.Scripts, "autoscale-state.py"),
		"--dir=" + filepath.Join(s.P.Keys, "autoscale"), "--every=" + s.S.AutoscaleEvery}
	if s.S.MetricsPort != "" {
		args = append(args, "--metrics-addr=:"+s.S.MetricsPort)
	}
	args = append(args, strings.Fields(s.S.Autoscale)...)
	s.keepRunning(service{name: "the autoscaler", path: filepath.Join(s.P.Keys, "minicluster-autoscale"), args: args})
}

// keepRunning starts svc, and again a second after each end, until stopServices.
func (s *Supervisor) keepRunning(svc service) {
	svc.env, svc.dir = s.env.List(), s.dir
	go func() {
		for {
			cmd := exec.Command(svc.path, svc.args...)
			cmd.Env, cmd.Dir = svc.env, svc.dir
			cmd.Stdout, cmd.Stderr = s.Stdout, s.Stderr
			s.svc.mu.Lock()
			if s.svc.stopping {
				s.svc.mu.Unlock()
				return
			}
			child, err := s.procs.Start(cmd)
			if err == nil {
				s.svc.running[child] = true
			}
			s.svc.mu.Unlock()
			status := 127
			if err == nil {
				status = child.Wait()
				s.svc.mu.Lock()
				delete(s.svc.running, child)
				s.svc.mu.Unlock()
			}
			if status != 0 {
				s.log("%s exited with status %d: starting it again", svc.name, status)
			}
			time.Sleep(time.Second)
		}
	}()
}

// stopServices sends SIGTERM to the running services and starts them no more.
func (s *Supervisor) stopServices() {
	s.svc.mu.Lock()
	defer s.svc.mu.Unlock()
	s.svc.stopping = true
	for c := range s.svc.running {
		c.Signal(syscall.SIGTERM)
	}
}
