//go:build e2e

package e2e

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The parts a step's CPU time is put in, by what each process is.
const (
	cpuKubernetes = "kubernetes" // kubelet, container runtime, runc, CNI, control plane, pause
	cpuFlux       = "flux"       // the brokers and what they start (rc scripts, job shells)
	cpuChart      = "chart"      // the keys sidecars, the keygen Job, the entrypoints and their commands
	cpuClient     = "client"     // helm, kubectl and this benchmark
	cpuOther      = "other"      // the rest of the machine (kernel threads, the sandbox's agents)
)

var cpuParts = []string{cpuKubernetes, cpuFlux, cpuChart, cpuClient, cpuOther}

// cpuMeter measures where a step's CPU time goes on this machine, for the local cluster,
// whose nodes' processes are this machine's: every process's user and system time from /proc
// at the start and at the end, and those that ended in between from the kernel's process
// accounting (acct(2), root only), each counted once. Nil (and every method a no-op) where
// the cluster's processes are not here or accounting cannot be turned on.
type cpuMeter struct {
	start  map[int]procCPU
	record string
	kube   map[string]float64 // after stop: the Kubernetes part by component (kubeComponent)
}

type procCPU struct {
	ppid  int
	comm  string
	ticks int64 // user + system, in clock ticks (100 a second)
}

const clockTicks = 100

// startCPU starts measuring, or returns nil when the kubelets are not processes of this machine.
func startCPU(b testing.TB) *cpuMeter {
	b.Helper()
	procs := readProcs()
	local := false
	for _, p := range procs {
		local = local || p.comm == "kubelet"
	}
	if !local {
		return nil
	}
	f, err := os.CreateTemp("", "minicluster-acct")
	if err != nil {
		b.Fatal(err)
	}
	f.Close()
	if err := syscall.Acct(f.Name()); err != nil {
		b.Logf("no CPU figures: process accounting (acct(2)) cannot be turned on: %v", err)
		os.Remove(f.Name())
		return nil
	}
	b.Cleanup(func() { acctOff(); os.Remove(f.Name()) }) // a step that fails leaves it on
	return &cpuMeter{start: procs, record: f.Name()}
}

// stop ends the measure and returns the CPU seconds of each part.
func (m *cpuMeter) stop(b testing.TB) map[string]float64 {
	b.Helper()
	if m == nil {
		return nil
	}
	errno := acctOff()
	end := readProcs()
	raw, err := os.ReadFile(m.record)
	os.Remove(m.record)
	if errno != 0 || err != nil {
		b.Fatalf("process accounting: %v %v", errno, err)
	}
	ended := parseAcct(raw)
	// A parent is found among the living first, then among the ended.
	known := map[int]procCPU{}
	for pid, p := range m.start {
		known[pid] = p
	}
	for _, r := range ended {
		known[r.pid] = r.procCPU
	}
	for pid, p := range end {
		known[pid] = p
	}
	used := map[string]float64{}
	m.kube = map[string]float64{}
	add := func(pid int, p procCPU) {
		ticks := p.ticks
		if s, ok := m.start[pid]; ok && s.comm == p.comm {
			ticks -= s.ticks
		}
		if ticks > 0 {
			part := cpuPart(pid, known)
			used[part] += float64(ticks) / clockTicks
			if part == cpuKubernetes {
				m.kube[kubeComponent(p.comm)] += float64(ticks) / clockTicks
			}
		}
	}
	for pid, p := range end {
		add(pid, p)
	}
	for _, r := range ended {
		add(r.pid, r.procCPU)
	}
	return used
}

// The components of Kubernetes' part, by process.
const (
	kubeKubelet    = "kubelet"
	kubeRuntime    = "runtime"     // containerd, its shims, runc, pause
	kubeAPI        = "apiserver"   // kube-apiserver and etcd
	kubeController = "controllers" // kube-controller-manager and kube-scheduler
	kubeNetwork    = "network"     // kube-proxy, netpol (kube-router's firewall), CoreDNS, the CNI plugins
)

// kubeComponent names the component a process of Kubernetes' part belongs to.
func kubeComponent(comm string) string {
	switch {
	case comm == "kubelet":
		return kubeKubelet
	case strings.HasPrefix(comm, "containerd") || strings.HasPrefix(comm, "runc") || comm == "pause":
		return kubeRuntime
	case comm == "kube-apiserver" || comm == "etcd":
		return kubeAPI
	case strings.HasPrefix(comm, "kube-controller") || comm == "kube-scheduler":
		return kubeController
	}
	return kubeNetwork
}

// kubernetes is the Kubernetes part of the last stop by component (nil without a meter).
func (m *cpuMeter) kubernetes() map[string]float64 {
	if m == nil {
		return nil
	}
	return m.kube
}

// acctOff turns process accounting off: acct(NULL).
func acctOff() syscall.Errno {
	_, _, errno := syscall.Syscall(syscall.SYS_ACCT, 0, 0, 0)
	return errno
}

// cpuPart puts a process in a part by itself or the nearest ancestor that says.
func cpuPart(pid int, known map[int]procCPU) string {
	below := ""
	for range 64 {
		p, ok := known[pid]
		if !ok || pid <= 2 {
			return cpuOther
		}
		switch c := p.comm; {
		case strings.HasPrefix(c, "flux-broker"):
			return cpuFlux
		case c == "flux-keygen":
			return cpuChart
		case strings.HasPrefix(c, "containerd-shim"):
			// Right below the shim: a container's own process, or runc starting one.
			if below == "" || below == "pause" || strings.HasPrefix(below, "runc") {
				return cpuKubernetes
			}
			return cpuChart
		case strings.HasPrefix(c, "kube") || strings.HasPrefix(c, "containerd") || strings.HasPrefix(c, "runc") ||
			c == "etcd" || c == "coredns":
			return cpuKubernetes
		case c == "e2e.test" || c == "helm" || c == "kubectl" || c == "go":
			return cpuClient
		}
		below = p.comm
		pid = p.ppid
	}
	return cpuOther
}

// readProcs reads every process's parent, command and CPU ticks from /proc.
func readProcs() map[int]procCPU {
	procs := map[int]procCPU{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // ended meanwhile
		}
		open, close := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
		if open < 0 || close < open {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(raw[:open])))
		// After the command: state ppid ... utime(12th) stime(13th).
		f := strings.Fields(string(raw[close+1:]))
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		procs[pid] = procCPU{ppid: ppid, comm: string(raw[open+1 : close]), ticks: utime + stime}
	}
	return procs
}

type acctRecord struct {
	pid int
	procCPU
}

// parseAcct reads the kernel's acct_v3 records (64 bytes each: pids at 16 and 20, user and
// system time at 32 and 34 as comp_t, the command at 48).
func parseAcct(raw []byte) []acctRecord {
	var out []acctRecord
	for len(raw) >= 64 {
		r := raw[:64]
		raw = raw[64:]
		if r[1] != 3 {
			continue // not version 3
		}
		le := binary.LittleEndian
		comm := string(bytes.TrimRight(r[48:64], "\x00"))
		out = append(out, acctRecord{pid: int(le.Uint32(r[16:])), procCPU: procCPU{
			ppid: int(le.Uint32(r[20:])), comm: comm,
			ticks: compT(le.Uint16(r[32:])) + compT(le.Uint16(r[34:])),
		}})
	}
	return out
}

// compT decodes a comp_t: a 13-bit mantissa and a base-8 exponent in the top 3 bits.
func compT(c uint16) int64 { return int64(c&0x1fff) << (3 * (c >> 13)) }

// addSums adds each figure of used into sum's figure of the same key (CPU parts, rates).
func addSums(sum map[string]float64, used map[string]float64) map[string]float64 {
	if used == nil {
		return sum
	}
	if sum == nil {
		sum = map[string]float64{}
	}
	for k, v := range used {
		sum[k] += v
	}
	return sum
}

// settledBusy is the share of the machine's CPU above which settle waits: an idle cluster with a
// MiniCluster up uses 5 to 15 % of two cores here.
const settledBusy = 0.25

// settle waits until this machine's CPU is mostly idle (at most settledBusy of it used over 2 s)
// or for at most max, so that a timed step does not share the cores with what the step before
// it left behind (a namespace's pods torn down, the kernel freeing their cgroups and memory),
// and logs the share it saw: whether a slow run started on a busy machine.
func settle(b testing.TB, max time.Duration) {
	b.Helper()
	start := time.Now()
	busy := 1.0
	for busy > settledBusy && time.Since(start) < max {
		busy = machineBusy(2 * time.Second)
	}
	b.Logf("settle: %.0f%% of the CPU busy after %s", 100*busy, time.Since(start).Round(time.Second))
}

// machineBusy is the share of this machine's CPU time that was not idle over window (from
// /proc/stat's cpu line; 1 where it cannot be read).
func machineBusy(window time.Duration) float64 {
	total0, idle0, ok0 := cpuTimes()
	time.Sleep(window)
	total1, idle1, ok1 := cpuTimes()
	if !ok0 || !ok1 || total1 <= total0 {
		return 1
	}
	return 1 - float64(idle1-idle0)/float64(total1-total0)
}

// cpuTimes reads the machine's total and idle (idle and iowait) CPU ticks from /proc/stat.
func cpuTimes() (total, idle int64, ok bool) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0, false
	}
	for i, s := range f[1:] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		// guest and guest_nice (the 9th and 10th) are already counted in user and nice.
		if i < 8 {
			total += n
		}
		if i == 3 || i == 4 {
			idle += n
		}
	}
	return total, idle, true
}
