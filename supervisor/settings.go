package supervisor

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Paths are the pod's fixed places, as the chart mounts them. Tests put them under a
// temporary root (Under).
type Paths struct {
	Config     string // the broker ConfigMap: broker.toml, hosts, size
	Run        string // the run volume: the broker's rundir (Run/flux) and this program's marks
	Keys       string // the keys volume, shared with the keys container
	Scripts    string // the scripts ConfigMap: rc3.sh, broker-rc3.sh, autoscale-state.py
	API        string // the API's private credentials and TLS key (the lead, api.enabled)
	MungeKey   string // where the private munge key goes
	Modprobe   string // the directory of the chart's modprobe rc1 file (modprobe-rc1.py)
	WrapperDir string // where the chart's `flux` for kubectl exec is mounted, not Flux
	OptView    string // the link a view image holds to its view (flux.view.mode=image)
}

// DefaultPaths are the paths in a broker container.
var DefaultPaths = Paths{
	Config:     "/minicluster/config",
	Run:        "/minicluster/run",
	Keys:       "/minicluster/keys",
	Scripts:    "/minicluster/scripts",
	API:        "/minicluster/api",
	MungeKey:   "/etc/munge/munge.key",
	Modprobe:   "/minicluster/modprobe",
	WrapperDir: "/usr/local/sbin",
	OptView:    "/opt/view",
}

// Under returns p with every path moved under root (for tests).
func (p Paths) Under(root string) Paths {
	j := func(s string) string { return filepath.Join(root, s) }
	return Paths{Config: j(p.Config), Run: j(p.Run), Keys: j(p.Keys), Scripts: j(p.Scripts), API: j(p.API),
		MungeKey: j(p.MungeKey), Modprobe: j(p.Modprobe), WrapperDir: j(p.WrapperDir), OptView: p.OptView}
}

// Marks and files this program and the broker's rc scripts leave in the run volume.
func (p Paths) rundir() string { return filepath.Join(p.Run, "flux") }

// A worker's broker (modprobe-rc1.py) leaves "joined" as its rc1 starts, "stopping" as it
// begins to stop, rc1-done as its rc1 ends. The broker's rc3 (broker-rc3.sh) leaves
// rc3-started and rc3-done. Each start of the broker begins without them.
func (p Paths) joined() string     { return filepath.Join(p.rundir(), "joined") }
func (p Paths) stopping() string   { return filepath.Join(p.rundir(), "stopping") }
func (p Paths) rc1Done() string    { return filepath.Join(p.rundir(), "rc1-done") }
func (p Paths) rc3Started() string { return filepath.Join(p.rundir(), "rc3-started") }
func (p Paths) rc3Done() string    { return filepath.Join(p.rundir(), "rc3-done") }
func (p Paths) rc3Plan() string    { return filepath.Join(p.rundir(), "rc3-plan") }

// onlineFIFO: modprobe-rc1.py writes "run" here once the broker runs (readiness.go).
func (p Paths) onlineFIFO() string { return filepath.Join(p.rundir(), "online.fifo") }

// localURI is the broker's socket, the same path in every pod (-Slocal-uri).
func (p Paths) localURI() string { return "local://" + filepath.Join(p.rundir(), "local") }

// online: the keys container serves this file to the kubelet's readiness probe.
func (p Paths) online() string { return filepath.Join(p.Keys, ".online") }

// apiStopped: POST /v1/service/stop leaves this behind: the instance was stopped on purpose.
func (p Paths) apiStopped() string { return filepath.Join(p.Run, "api-stopped") }

// Fast exit: the command's wrapper writes its status to commandStatus; on every worker,
// commandEnded once the command has ended with 0, just before the wrapper ends its broker.
func (p Paths) commandStatus() string { return filepath.Join(p.Run, "command-status") }
func (p Paths) commandEnded() string  { return filepath.Join(p.Run, "command-ended") }

// Settings are the broker container's settings: the MINICLUSTER_* variables the chart's pod
// template sets (templates/_broker-container.tpl, minicluster.operatorEnv).
type Settings struct {
	Index                                                int    // JOB_COMPLETION_INDEX: 0 is the lead broker
	IndexText                                            string // as the environment says it, for the log's prefix
	Image                                                string // MINICLUSTER_IMAGE, for messages
	Command                                              string // the user's command: empty for an interactive MiniCluster
	Tasks                                                int
	Rejoin                                               bool // start the broker again when its instance ends
	ExitCannotStart                                      int  // the exit code of a broker that cannot start
	LogLevel                                             string
	ConnectTimeout                                       string
	CleanupTimeout                                       string
	EphemeralExit                                        string // fast: the command's status ends the lead at once
	Topology                                             string
	Scheduler                                            string
	Cores, GPUs                                          int
	Helpers                                              []string // the helpers' directories (MINICLUSTER_HELPERS)
	Wrap                                                 string   // flux.wrap, comma-separated
	BrokerOptions                                        string   // flux.brokerOptions, one a line
	FluxView                                             string   // the copy of the view (or, once followed, the view image's view)
	FluxViewRoot                                         string   // flux.view.mode=image: the view image's root
	FluxViewImage                                        string
	CurveCert                                            string // where the private certificate goes
	ResourcePath                                         string // where R goes
	State                                                string // flux.state's archive (the lead's)
	StateDumpTimeout                                     int    // seconds
	APIPort                                              string
	APIAuth                                              bool
	APITokenLifetime                                     string
	APITLS                                               bool
	Autoscale                                            string // flags for minicluster-autoscale
	AutoscaleEvery                                       string
	MetricsPort                                          string
	Quiet, Strict, Debug, ZeroMQ, Timed                  bool
	CmdInit, CmdPre, CmdBrokerPre, CmdWorkerPre, CmdPost string
	CommandPrefix                                        string
	CompleteWorkers                                      bool
	Batch                                                string // "", batch or raw
	BatchOutput                                          string
}

// ReadSettings reads the settings from getenv. Numbers the chart always writes must be
// numbers; everything else defaults as the chart's defaults do.
func ReadSettings(getenv func(string) string) (Settings, error) {
	s := Settings{
		IndexText:        getenv("JOB_COMPLETION_INDEX"),
		Image:            getenv("MINICLUSTER_IMAGE"),
		Command:          getenv("MINICLUSTER_COMMAND"),
		Rejoin:           getenv("MINICLUSTER_REJOIN") == "true",
		LogLevel:         getenv("MINICLUSTER_LOG_LEVEL"),
		ConnectTimeout:   getenv("MINICLUSTER_CONNECT_TIMEOUT"),
		CleanupTimeout:   or(getenv("MINICLUSTER_CLEANUP_TIMEOUT"), "0s"),
		EphemeralExit:    getenv("MINICLUSTER_EPHEMERAL_EXIT"),
		Topology:         getenv("MINICLUSTER_TOPOLOGY"),
		Scheduler:        getenv("MINICLUSTER_SCHEDULER"),
		Helpers:          strings.Fields(getenv("MINICLUSTER_HELPERS")),
		Wrap:             getenv("MINICLUSTER_WRAP"),
		BrokerOptions:    getenv("MINICLUSTER_BROKER_OPTIONS"),
		FluxView:         getenv("MINICLUSTER_FLUX_VIEW"),
		FluxViewRoot:     getenv("MINICLUSTER_FLUX_VIEW_ROOT"),
		FluxViewImage:    getenv("MINICLUSTER_FLUX_VIEW_IMAGE"),
		CurveCert:        getenv("MINICLUSTER_CURVE_CERT"),
		ResourcePath:     getenv("MINICLUSTER_RESOURCE_PATH"),
		State:            getenv("MINICLUSTER_STATE"),
		APIPort:          getenv("MINICLUSTER_API_PORT"),
		APIAuth:          or(getenv("MINICLUSTER_API_AUTH"), "true") == "true",
		APITokenLifetime: or(getenv("MINICLUSTER_API_TOKEN_LIFETIME"), "8h"),
		APITLS:           getenv("MINICLUSTER_API_TLS") == "true",
		Autoscale:        getenv("MINICLUSTER_AUTOSCALE"),
		AutoscaleEvery:   or(getenv("MINICLUSTER_AUTOSCALE_EVERY"), "2s"),
		MetricsPort:      getenv("MINICLUSTER_METRICS_PORT"),
		Quiet:            getenv("MINICLUSTER_QUIET") == "true",
		Strict:           getenv("MINICLUSTER_STRICT") == "true",
		Debug:            getenv("MINICLUSTER_DEBUG") == "true",
		ZeroMQ:           getenv("MINICLUSTER_ZEROMQ") == "true",
		Timed:            getenv("MINICLUSTER_TIMED") == "true",
		CmdInit:          getenv("MINICLUSTER_CMD_INIT"),
		CmdPre:           getenv("MINICLUSTER_CMD_PRE"),
		CmdBrokerPre:     getenv("MINICLUSTER_CMD_BROKER_PRE"),
		CmdWorkerPre:     getenv("MINICLUSTER_CMD_WORKER_PRE"),
		CmdPost:          getenv("MINICLUSTER_CMD_POST"),
		CommandPrefix:    getenv("MINICLUSTER_COMMAND_PREFIX"),
		CompleteWorkers:  getenv("MINICLUSTER_COMPLETE_WORKERS") == "true",
		Batch:            getenv("MINICLUSTER_BATCH"),
		BatchOutput:      or(getenv("MINICLUSTER_BATCH_OUTPUT"), "/tmp/fluxout"),
	}
	var err error
	number := func(name, def string) int {
		v := or(getenv(name), def)
		n, e := strconv.Atoi(v)
		if e != nil && err == nil {
			err = fmt.Errorf("%s=%q is not a number", name, v)
		}
		return n
	}
	s.Tasks = number("MINICLUSTER_TASKS", "0")
	s.ExitCannotStart = number("MINICLUSTER_EXIT_CANNOT_START", "78")
	s.Cores = number("MINICLUSTER_CORES", "0")
	s.GPUs = number("MINICLUSTER_GPUS", "0")
	s.StateDumpTimeout = number("MINICLUSTER_STATE_DUMP_TIMEOUT", "10")
	if s.IndexText != "" {
		s.Index = number("JOB_COMPLETION_INDEX", "0")
	}
	return s, err
}

// ephemeralLead: the lead of a MiniCluster with a command, which runs it and ends with it.
func (s Settings) ephemeralLead() bool { return s.Command != "" && s.Index == 0 }

// or returns v, or def when v is empty.
func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Environ is the environment this program changes as it goes (Flux's PATH, the exports of
// commands.pre...) and starts every process with.
type Environ struct{ vars map[string]string }

// NewEnviron reads kv, as os.Environ returns it.
func NewEnviron(kv []string) *Environ {
	e := &Environ{vars: map[string]string{}}
	for _, s := range kv {
		if k, v, ok := strings.Cut(s, "="); ok {
			e.vars[k] = v
		}
	}
	return e
}

// Get returns the value of k and whether it is set.
func (e *Environ) Get(k string) (string, bool) { v, ok := e.vars[k]; return v, ok }

// Value returns the value of k, empty when unset.
func (e *Environ) Value(k string) string { return e.vars[k] }

// Set sets k to v.
func (e *Environ) Set(k, v string) { e.vars[k] = v }

// Unset removes k.
func (e *Environ) Unset(k string) { delete(e.vars, k) }

// List is the environment as a process takes it, sorted.
func (e *Environ) List() []string {
	out := make([]string, 0, len(e.vars))
	for k, v := range e.vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// With returns the environment with the pairs kv (k=v) set, e unchanged.
func (e *Environ) With(kv ...string) []string {
	c := &Environ{vars: make(map[string]string, len(e.vars)+len(kv))}
	for k, v := range e.vars {
		c.vars[k] = v
	}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		c.vars[k] = v
	}
	return c.List()
}
