// Package convert turns a Flux Operator MiniCluster (flux-framework.org/v1alpha2) into values of
// the minicluster chart that make the same MiniCluster. Every field of the operator's spec is in
// Fields: mapped to values, the same without one, or refused with what to do instead.
package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/minicluster/minicluster/internal/yamlstream"
)

const (
	apiVersion = "flux-framework.org/v1alpha2"
	kind       = "MiniCluster"
	// The operator's defaults, where the chart's differ.
	operatorViewImage = "ghcr.io/converged-computing/flux-view-ubuntu:tag-noble"
	// The headless Service of earlier operators (this one names it after the MiniCluster),
	// still in their docs' names of the services pod.
	olderHeadlessName = "flux-service"
	maxBrokers        = 100000 // the chart's limit: Kubernetes' on an indexed Job's parallelism
)

// Options change the images of the result.
type Options struct {
	// Images maps an image of the MiniCluster to the one the values use (--image FROM=TO).
	Images map[string]string
	// ViewImage is the Flux view image (flux.view.image) when set; else the MiniCluster's,
	// else the operator's default view.
	ViewImage string
}

// Result is one converted MiniCluster.
type Result struct {
	Name      string // metadata.name: the release name that gives the same host names
	Namespace string // metadata.namespace, if any
	Values    map[string]any
}

// ParseImageFlag reads FROM=TO.
func ParseImageFlag(s string) (from, to string, err error) {
	from, to, ok := strings.Cut(s, "=")
	if !ok || from == "" || to == "" {
		return "", "", fmt.Errorf("--image %q: want FROM=TO, e.g. --image ubuntu:noble=registry.example.com/app:1.0", s)
	}
	return from, to, nil
}

// Convert reads exactly one MiniCluster from in. It refuses another kind or apiVersion, an
// unknown field, a field the chart cannot do, and a file with several MiniClusters (each
// release gets its own values file).
func Convert(in []byte, opts Options) (Result, error) {
	var docs []string
	for _, d := range yamlstream.Documents(string(in)) {
		if strings.TrimSpace(stripComments(d)) != "" {
			docs = append(docs, d)
		}
	}
	switch {
	case len(docs) == 0:
		return Result{}, errors.New("no MiniCluster in the input: want one flux-framework.org/v1alpha2 MiniCluster")
	case len(docs) > 1:
		return Result{}, fmt.Errorf("the input has %d documents: convert one MiniCluster at a time (one values file per helm release); split the file at its `---` lines", len(docs))
	}
	return convertDoc([]byte(docs[0]), opts)
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func convertDoc(doc []byte, opts Options) (Result, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return Result{}, fmt.Errorf("not YAML: %w", err)
	}
	if head.Kind != kind {
		return Result{}, fmt.Errorf("kind %q: want a MiniCluster (kind: MiniCluster, apiVersion: %s)", head.Kind, apiVersion)
	}
	if head.APIVersion != apiVersion {
		return Result{}, fmt.Errorf("apiVersion %q: only %s MiniClusters are converted; update the file to v1alpha2 first (the Flux Operator's docs list the changes)", head.APIVersion, apiVersion)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(doc, &raw); err != nil {
		return Result{}, err
	}
	if refused := refusals(raw); len(refused) > 0 {
		return Result{}, fmt.Errorf("cannot convert: %d %s:\n  %s", len(refused), plural(len(refused), "field", "fields"), strings.Join(refused, "\n  "))
	}
	var mc miniCluster
	if err := yaml.UnmarshalStrict(doc, &mc); err != nil {
		return Result{}, fmt.Errorf("%w: see `minicluster-convert --table` for the v1alpha2 MiniCluster's fields", err)
	}
	if mc.Metadata.Name == "" {
		return Result{}, errors.New("metadata.name is empty: the MiniCluster's name becomes the release name")
	}
	c := converter{mc: mc, opts: opts, values: map[string]any{}}
	if err := c.run(); err != nil {
		return Result{}, err
	}
	return Result{Name: mc.Metadata.Name, Namespace: mc.Metadata.Namespace, Values: c.values}, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// refusedFields are the fields of Fields the chart cannot do (Refused) that the document sets
// to other than the operator's default, in path order, each with what to do.
func refusedFields(raw map[string]any) []string {
	spec, _ := raw["spec"].(map[string]any)
	var errs []string
	var walk func(path, shown string, v any)
	walk = func(path, shown string, v any) {
		if f, ok := fieldExact(path); ok {
			if f.Status == Refused && !isZero(v) && (f.Default == "" || fmt.Sprint(v) != f.Default) {
				errs = append(errs, fmt.Sprintf("%s: %s", shown, f.Why))
			}
			return
		}
		switch x := v.(type) {
		case map[string]any:
			if isKeyed(path) {
				for _, k := range sortedKeys(x) {
					walk(path+"{}", shown+"."+k, x[k])
				}
				return
			}
			for _, k := range sortedKeys(x) {
				walk(path+"."+k, shown+"."+k, x[k])
			}
		case []any:
			for i, item := range x {
				walk(path+"[]", fmt.Sprintf("%s[%d]", shown, i), item)
			}
		}
	}
	walk("spec", "spec", spec)
	return errs
}

func fieldExact(path string) (Field, bool) {
	for _, f := range Fields {
		if f.Path == path {
			return f, true
		}
	}
	return Field{}, false
}

// isKeyed says whether the object at path is a map with keys of the user's (volumes, secrets).
func isKeyed(path string) bool {
	for _, f := range Fields {
		if strings.HasPrefix(f.Path, path+"{}") {
			return true
		}
	}
	return false
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case float64:
		return x == 0
	case int64:
		return x == 0
	case map[string]any:
		for _, e := range x {
			if !isZero(e) {
				return false
			}
		}
		return true
	case []any:
		return len(x) == 0
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

type converter struct {
	mc          miniCluster
	opts        Options
	values      map[string]any
	pullSecrets []string
}

func (c *converter) set(path string, v any) {
	m := c.values
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

func (c *converter) image(s string) string {
	if to, ok := c.opts.Images[s]; ok {
		return to
	}
	return s
}

func (c *converter) run() error {
	s := c.mc.Spec
	size := s.Size
	if size == 0 {
		size = 1 // the operator's default
	}
	if size < 1 || size > maxBrokers {
		return fmt.Errorf("spec.size %d: the chart runs 1 to %d brokers", s.Size, maxBrokers)
	}
	c.set("size", int(size))
	if s.MaxSize != 0 && (s.MaxSize < size || s.MaxSize > maxBrokers) {
		return fmt.Errorf("spec.maxSize %d: want size (%d) to %d", s.MaxSize, size, maxBrokers)
	}
	// The operator's maxSize defaults to size; the chart's would be max(size, 16).
	c.set("maxSize", int(max(s.MaxSize, size)))
	if s.BackoffLimit < 0 {
		return fmt.Errorf("spec.backoffLimit %d: want 0 or more", s.BackoffLimit)
	}
	if s.BackoffLimit > 0 {
		c.set("job.backoffLimit", int(s.BackoffLimit))
	}
	if s.DeadlineSeconds != 0 && s.DeadlineSeconds != 31500000 {
		if s.DeadlineSeconds < 0 {
			return fmt.Errorf("spec.deadlineSeconds %d: want a positive number of seconds", s.DeadlineSeconds)
		}
		c.set("job.activeDeadlineSeconds", s.DeadlineSeconds)
	}
	if s.Cleanup {
		c.set("job.ttlSecondsAfterFinished", 0)
	}
	if len(s.JobLabels) > 0 {
		c.set("jobLabels", toAny(s.JobLabels))
	}
	if s.ShareProcessNamespace {
		c.set("shareProcessNamespace", true)
	}
	if err := c.flux(); err != nil {
		return err
	}
	c.pod()
	if err := c.containers(int(size)); err != nil {
		return err
	}
	if err := c.services(); err != nil {
		return err
	}
	if len(c.pullSecrets) > 0 {
		var list []any
		for _, name := range c.pullSecrets {
			list = append(list, map[string]any{"name": name})
		}
		c.set("imagePullSecrets", list)
	}
	return nil
}

func (c *converter) addPullSecret(name string) {
	for _, n := range c.pullSecrets {
		if n == name {
			return
		}
	}
	if name != "" {
		c.pullSecrets = append(c.pullSecrets, name)
	}
}

func (c *converter) flux() error {
	f := c.mc.Spec.Flux
	view := f.Container
	if view.Disable {
		c.set("flux.view.enabled", false)
	} else {
		img := view.Image
		if img == "" {
			img = operatorViewImage
		}
		img = c.image(img)
		if c.opts.ViewImage != "" {
			img = c.opts.ViewImage
		}
		c.set("flux.view.image", img)
		if view.PullAlways {
			c.set("flux.view.imagePullPolicy", "Always")
		}
		if view.MountPath != "" && view.MountPath != "/mnt/flux" {
			c.set("flux.view.mountPath", view.MountPath)
		}
		if r := toMap(view.Resources); len(r) > 0 {
			c.set("flux.view.resources", r)
		}
		if sc := toMap(view.SecurityContext); len(sc) > 0 {
			c.set("flux.view.securityContext", sc)
		}
	}
	c.addPullSecret(view.ImagePullSecret)
	if f.ConnectTimeout != "" {
		c.set("flux.connectTimeout", f.ConnectTimeout)
	}
	if f.Topology != "" {
		c.set("flux.topology", f.Topology)
	}
	if f.MinimalService {
		// The lead alone has a name: every worker must be its child.
		if f.Topology != "" {
			return fmt.Errorf("spec.flux.minimalService with spec.flux.topology %q: only the lead has a DNS name, so workers cannot be each other's parents; drop the topology (flat) or minimalService", f.Topology)
		}
		c.set("flux.minimalService", true)
		c.set("flux.topology", "")
	}
	if f.Wrap != "" {
		if strings.ContainsAny(f.Wrap, " \t\n") {
			return fmt.Errorf("spec.flux.wrap %q: flux start --wrap takes comma-separated words without spaces, e.g. strace,-f", f.Wrap)
		}
		c.set("flux.wrap", f.Wrap)
	}
	if f.CurveCert != "" {
		c.set("curve.cert", f.CurveCert)
	}
	if f.LogLevel != 0 {
		if f.LogLevel < 0 || f.LogLevel > 7 {
			return fmt.Errorf("spec.flux.logLevel %d: want 0 to 7", f.LogLevel)
		}
		c.set("flux.logLevel", int(f.LogLevel))
	}
	if f.CompleteWorkers {
		c.set("flux.completeWorkers", true)
	}
	if f.Scheduler.Simple {
		c.set("flux.scheduler", "simple")
	}
	if q := f.Scheduler.QueuePolicy; q != "" && q != "fcfs" {
		c.set("flux.queuePolicy", q)
	}
	return nil
}

func (c *converter) pod() {
	p := c.mc.Spec.Pod
	if len(p.Annotations) > 0 {
		c.set("podAnnotations", toAny(p.Annotations))
	}
	if len(p.Labels) > 0 {
		c.set("podLabels", toAny(p.Labels))
	}
	if p.ServiceAccountName != "" {
		c.set("serviceAccountName", p.ServiceAccountName)
	}
	// The operator sets automountServiceAccountToken on every pod (false unless given).
	if p.AutomountServiceAccountToken {
		c.set("automountServiceAccountToken", true)
	} else if p.ServiceAccountName != "" {
		c.set("automountServiceAccountToken", false)
	}
	if p.RuntimeClassName != "" {
		c.set("runtimeClassName", p.RuntimeClassName)
	}
	if p.SchedulerName != "" {
		c.set("schedulerName", p.SchedulerName)
	}
	if len(p.NodeSelector) > 0 {
		c.set("nodeSelector", toAny(p.NodeSelector))
	}
	if len(p.NodeAffinity) > 0 {
		var exprs []any
		for _, key := range sortedKeys(p.NodeAffinity) {
			exprs = append(exprs, map[string]any{"key": key, "operator": "In", "values": toAny(p.NodeAffinity[key])})
		}
		c.set("affinity", map[string]any{"nodeAffinity": map[string]any{
			"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": []any{map[string]any{"matchExpressions": exprs}},
			},
		}})
	}
	if len(p.Tolerations) > 0 {
		c.set("tolerations", toAny(p.Tolerations))
	}
	if p.DNSPolicy != "" {
		c.set("dnsPolicy", p.DNSPolicy)
	}
	if p.HostIPC {
		c.set("hostIPC", true)
	}
	if p.HostPID {
		c.set("hostPID", true)
	}
	if sc := toMap(p.SecurityContext); len(sc) > 0 {
		c.set("podSecurityContext", sc)
	}
}

// containers maps the container that runs Flux to the chart's application container and every
// other one to a sidecar.
func (c *converter) containers(size int) error {
	cs := c.mc.Spec.Containers
	if len(cs) == 0 {
		return errors.New("spec.containers is empty: a MiniCluster needs the container that runs Flux")
	}
	runner := -1
	if len(cs) == 1 {
		runner = 0
	} else {
		for i, ct := range cs {
			if ct.RunFlux {
				if runner >= 0 {
					return fmt.Errorf("spec.containers[%d].runFlux: containers %d and %d both ask to run Flux; set runFlux on one", i, runner, i)
				}
				runner = i
			}
		}
		if runner < 0 {
			return errors.New("spec.containers: none has runFlux: true; set it on the container that runs Flux")
		}
	}
	var volumes []any
	seen := map[string]bool{}
	var sidecars, fluxContainers []any
	for i, ct := range cs {
		at := fmt.Sprintf("spec.containers[%d]", i)
		mounts, vols, err := c.volumes(at, ct, seen)
		if err != nil {
			return err
		}
		volumes = append(volumes, vols...)
		c.addPullSecret(ct.ImagePullSecret)
		env := envOf(ct)
		if i == runner {
			if err := c.runnerContainer(at, ct, size); err != nil {
				return err
			}
			var all []any
			for _, k := range sortedKeys(c.mc.Spec.Flux.Environment) {
				all = append(all, map[string]any{"name": k, "value": c.mc.Spec.Flux.Environment[k]})
			}
			if all = withPythonPath(append(all, env...), c.mc.Spec.Flux.Container.PythonPath); len(all) > 0 {
				c.set("env", all)
			}
			if len(mounts) > 0 {
				c.set("volumeMounts", mounts)
			}
			continue
		}
		if !ct.NoWrapEntrypoint {
			fc, err := c.fluxContainer(at, ct, env, mounts)
			if err != nil {
				return err
			}
			fluxContainers = append(fluxContainers, fc)
			continue
		}
		sc, err := c.sidecar(at, ct, env, mounts)
		if err != nil {
			return err
		}
		sidecars = append(sidecars, sc)
	}
	if len(fluxContainers) > 0 {
		c.set("fluxContainers", fluxContainers)
	}
	if len(volumes) > 0 {
		c.set("volumes", volumes)
	}
	if len(sidecars) > 0 {
		c.set("sidecars", sidecars)
	}
	return nil
}

func pullPolicy(ct miniClusterContainer) string {
	if ct.PullAlways {
		return "Always"
	}
	return ct.ImagePullPolicy
}

func (c *converter) runnerContainer(at string, ct miniClusterContainer, size int) error {
	if ct.Image == "" {
		return fmt.Errorf("%s.image is empty: give the application image", at)
	}
	if ct.Commands.ServicePre != "" {
		return fmt.Errorf("%s.commands.servicePre: only the containers that use the broker's Flux beside it run it, not the one that runs Flux; move it into commands.pre", at)
	}
	c.set("image", c.image(ct.Image))
	if p := pullPolicy(ct); p != "" {
		c.set("imagePullPolicy", p)
	}
	if ct.WorkingDir != "" {
		c.set("workingDir", ct.WorkingDir)
	}
	if r := toMap(ct.Resources); len(r) > 0 {
		c.set("resources", r)
	}
	if sc := toMap(ct.SecurityContext); len(sc) > 0 {
		c.set("securityContext", sc)
	}
	if l := lifecycleOf(ct); l != nil {
		c.set("lifecycle", l)
	}
	command := strings.TrimSpace(ct.Command)
	script := strings.TrimSpace(ct.Commands.Script) != ""
	if script {
		if command != "" {
			return fmt.Errorf("%s: both command and commands.script are set (the operator refuses this too); keep one", at)
		}
		if ct.Batch {
			return fmt.Errorf("%s: commands.script with batch: the operator's batch runs the lines of command and never the script; drop one", at)
		}
		command = scriptCommand(ct.Commands.Script)
	}
	c.operatorSettings(ct)
	if c.mc.Spec.Interactive || command == "" {
		c.set("command", "")
		return nil
	}
	if ct.Launcher && ct.Batch {
		return fmt.Errorf("%s: launcher and batch are both set (the operator refuses this too); keep one", at)
	}
	if ct.Launcher {
		// flux start runs a launcher itself: the chart's tasks 0.
		c.set("command", command)
		return nil
	}
	// The operator submits the command as a job: flux submit [-N size] -n tasks (tasks default 1).
	tasks := 1
	if c.mc.Spec.Tasks != nil {
		tasks = int(*c.mc.Spec.Tasks)
	}
	if tasks < 0 {
		return fmt.Errorf("spec.tasks %d: want 0 or more", tasks)
	}
	if ct.Batch {
		// The chart's batch takes the operator's tasks for the batch's allocation.
		c.set("tasks", tasks)
		c.set("command", command)
		return nil
	}
	// The operator submits the command as a job of tasks tasks. Where the chart's tasks cannot
	// say the same (fewer tasks than brokers, the operator's submit options, a script run by
	// bash), the command becomes the operator's own submit line, as the initial program.
	if f := c.mc.Spec.Flux; f.OptionFlags != "" || f.SubmitCommand != "" || script || tasks > 0 && tasks < size {
		submit := "flux submit"
		if f.SubmitCommand != "" {
			submit = f.SubmitCommand
		}
		nodes := "-n" + strconv.Itoa(tasks)
		switch {
		case tasks == 0:
			nodes = "-N " + strconv.Itoa(size)
		case tasks >= size:
			nodes = "-N " + strconv.Itoa(size) + " " + nodes
		}
		words := []string{submit, nodes}
		if f.OptionFlags != "" {
			words = append(words, f.OptionFlags)
		}
		if c.mc.Spec.Logging.Debug {
			words = append(words, "-vvv")
		}
		c.set("command", strings.Join(append(words, "--quiet", "--watch", command), " "))
		return nil
	}
	// The chart's tasks: flux submit -N size -n tasks, the operator's line for tasks >= size;
	// its tasks 0 is one task per broker.
	if tasks == 0 {
		tasks = size
	}
	c.set("tasks", tasks)
	c.set("command", command)
	return nil
}

// scriptCommand runs a commands.script as the operator does: written out through an unquoted
// heredoc, so that the shell expands $VAR, $(...) and \$ in it first, then run with bash.
func scriptCommand(script string) string {
	script = strings.TrimRight(script, "\n")
	end := "EOF"
	for slices.Contains(strings.Split(script, "\n"), end) {
		end += "_"
	}
	return "/bin/bash -c \"$(cat <<" + end + "\n" + script + "\n" + end + "\n)\""
}

func (c *converter) sidecar(at string, ct miniClusterContainer, env, mounts []any) (map[string]any, error) {
	if err := checkName(at, ct); err != nil {
		return nil, err
	}
	if strings.TrimSpace(ct.Command) != "" || ct.HasCommands() {
		return nil, fmt.Errorf("%s.command: the operator ignores the command and commands of a container with noWrapEntrypoint; drop them", at)
	}
	sc := map[string]any{"name": ct.Name, "image": c.image(ct.Image)}
	addContainerFields(sc, ct, env, mounts)
	return sc, nil
}

// services maps the operator's services (containers of a pod of their own, run as their images
// give them) to the chart's services and servicesVolumes.
// addContainerFields sets the fields a container of the chart's values takes as the operator's
// container gives them: pull policy, working directory, ports, environment, mounts, resources,
// security context and lifecycle hooks.
func addContainerFields(m map[string]any, ct miniClusterContainer, env, mounts []any) {
	if p := pullPolicy(ct); p != "" {
		m["imagePullPolicy"] = p
	}
	if ct.WorkingDir != "" {
		m["workingDir"] = ct.WorkingDir
	}
	if len(ct.Ports) > 0 {
		var ports []any
		for _, p := range ct.Ports {
			ports = append(ports, map[string]any{"containerPort": int(p), "protocol": "TCP"})
		}
		m["ports"] = ports
	}
	if len(env) > 0 {
		m["env"] = env
	}
	if len(mounts) > 0 {
		m["volumeMounts"] = mounts
	}
	if r := toMap(ct.Resources); len(r) > 0 {
		m["resources"] = r
	}
	if s := toMap(ct.SecurityContext); len(s) > 0 {
		m["securityContext"] = s
	}
	if l := lifecycleOf(ct); l != nil {
		m["lifecycle"] = l
	}
}

// lifecycleOf is the container's postStartExec and preStopExec as a Kubernetes Lifecycle, each
// run with /bin/sh -c (the operator's exec runs the string as one program), or nil.
func lifecycleOf(ct miniClusterContainer) map[string]any {
	hooks := map[string]any{}
	for name, line := range map[string]string{"postStart": ct.LifeCycle.PostStartExec, "preStop": ct.LifeCycle.PreStopExec} {
		if line = strings.TrimSpace(line); line != "" {
			hooks[name] = map[string]any{"exec": map[string]any{"command": []any{"/bin/sh", "-c", line}}}
		}
	}
	if len(hooks) == 0 {
		return nil
	}
	return hooks
}

func (c *converter) services() error {
	var services, volumes []any
	seen := map[string]bool{}
	for i, ct := range c.mc.Spec.Services {
		at := fmt.Sprintf("spec.services[%d]", i)
		for name, set := range map[string]bool{"runFlux": ct.RunFlux, "launcher": ct.Launcher, "batch": ct.Batch, "batchRaw": ct.BatchRaw, "logs": ct.Logs != ""} {
			if set {
				return fmt.Errorf("%s.%s: a service runs no Flux, and the operator ignores it there; drop it", at, name)
			}
		}
		mounts, vols, err := c.volumes(at, ct, seen)
		if err != nil {
			return err
		}
		volumes = append(volumes, vols...)
		c.addPullSecret(ct.ImagePullSecret)
		if ct.Image == "" {
			return fmt.Errorf("%s.image is empty: give the service's image", at)
		}
		sc, err := c.sidecar(at, ct, envOf(ct), mounts)
		if err != nil {
			return err
		}
		services = append(services, sc)
	}
	if len(services) > 0 {
		c.set("services", services)
		c.values = renamed(c.values, servicesHostname(c.mc.Metadata.Name, c.mc.Spec.Network.HeadlessName)).(map[string]any)
	}
	if len(volumes) > 0 {
		c.set("servicesVolumes", volumes)
	}
	return nil
}

// servicesHostname matches the operator's names of its services pod: <name>-services.<subdomain>
// with the subdomain its headless Service: headlessName, else the MiniCluster's name (this
// operator's default), or flux-service (older operators' default, still in their docs); alone
// or followed by the namespace and domain. The chart's name is <name>-services; groups 1 and 3
// are the characters around the name, kept.
func servicesHostname(name, headless string) *regexp.Regexp {
	subdomains := []string{regexp.QuoteMeta(name), olderHeadlessName}
	if headless != "" {
		subdomains = append(subdomains, regexp.QuoteMeta(headless))
	}
	return regexp.MustCompile(`(^|[^.\w-])(` + regexp.QuoteMeta(name+"-services") + `)\.(?:` + strings.Join(subdomains, "|") + `)(\.|[^.\w-]|$)`)
}

// renamed is v with the operator's names of the services pod made the chart's in every string.
func renamed(v any, name *regexp.Regexp) any {
	switch x := v.(type) {
	case string:
		// Twice: a match takes the character after it, which may come before the next one.
		return name.ReplaceAllString(name.ReplaceAllString(x, "$1$2$3"), "$1$2$3")
	case map[string]any:
		for k, e := range x {
			x[k] = renamed(e, name)
		}
	case []any:
		for i, e := range x {
			x[i] = renamed(e, name)
		}
	}
	return v
}

func checkName(at string, ct miniClusterContainer) error {
	if ct.Name == "" {
		return fmt.Errorf("%s.name is empty: a container that does not run Flux needs a name (the operator requires one too)", at)
	}
	switch ct.Name {
	case "flux", "flux-view", "keys":
		return fmt.Errorf("%s.name %q is a container of the chart's: rename it", at, ct.Name)
	}
	return nil
}

// fluxContainer maps a container that the operator wraps to use its pod's broker (no runFlux,
// no noWrapEntrypoint): its start script runs commands.init, servicePre, the command and post
// in turn, with ${fluxsocket} naming the broker's socket, once that exists.
func (c *converter) fluxContainer(at string, ct miniClusterContainer, env, mounts []any) (map[string]any, error) {
	if err := checkName(at, ct); err != nil {
		return nil, err
	}
	if ct.Image == "" {
		return nil, fmt.Errorf("%s.image is empty: give the container's image", at)
	}
	cm := ct.Commands
	for name, set := range map[string]bool{"commands.pre": cm.Pre != "", "commands.brokerPre": cm.BrokerPre != "", "commands.workerPre": cm.WorkerPre != "",
		"commands.prefix": cm.Prefix != "", "launcher": ct.Launcher, "batch": ct.Batch, "batchRaw": ct.BatchRaw, "logs": ct.Logs != ""} {
		if set {
			return nil, fmt.Errorf("%s.%s: only the container that runs Flux (runFlux) uses it, and the operator ignores it here; drop it, or put the work in this container's command", at, name)
		}
	}
	command := strings.TrimSpace(ct.Command)
	if command == "" {
		command = strings.TrimSpace(cm.Script)
	} else if cm.Script != "" {
		return nil, fmt.Errorf("%s: both command and commands.script are set; keep one", at)
	}
	// commands.post alone is a whole container: the operator runs it once the socket exists.
	if command == "" && strings.TrimSpace(cm.Init+cm.ServicePre+cm.Post) == "" {
		return nil, fmt.Errorf("%s.command is empty: a container that uses the broker's Flux runs its command or commands (init, servicePre, post); give one, or set noWrapEntrypoint: true to run it as its image gives it", at)
	}
	var script []string
	for _, s := range []string{cm.Init, cm.ServicePre, command, cm.Post} {
		if s = strings.TrimSpace(s); s != "" {
			script = append(script, s)
		}
	}
	fc := map[string]any{"name": ct.Name, "image": c.image(ct.Image), "command": strings.Join(script, "\n")}
	addContainerFields(fc, ct, env, mounts)
	if c.mc.Spec.Flux.NoWaitSocket {
		fc["waitSocket"] = false
	}
	return fc, nil
}

// operatorSettings maps logging, commands and batch, which the chart has under the same names.
func (c *converter) operatorSettings(ct miniClusterContainer) {
	l := c.mc.Spec.Logging
	for name, on := range map[string]bool{"quiet": l.Quiet, "strict": l.Strict, "debug": l.Debug, "zeromq": l.Zeromq, "timed": l.Timed} {
		if on {
			c.set("logging."+name, true)
		}
	}
	cm := ct.Commands
	for name, script := range map[string]string{"init": cm.Init, "pre": cm.Pre, "post": cm.Post, "workerPre": cm.WorkerPre, "brokerPre": cm.BrokerPre, "prefix": cm.Prefix} {
		if script != "" {
			c.set("commands."+name, script)
		}
	}
	if ct.Batch {
		c.set("batch.enabled", true)
		if ct.BatchRaw {
			c.set("batch.raw", true)
		}
		if ct.Logs != "" {
			c.set("batch.outputDir", ct.Logs)
		}
	}
}

// withPythonPath is env with dir appended to its PYTHONPATH, as the operator's flux.container.pythonPath
// does for Flux's processes (the chart's own start puts the view's site-packages first).
func withPythonPath(env []any, dir string) []any {
	if dir = strings.TrimSpace(dir); dir == "" {
		return env
	}
	for _, e := range env {
		if m := e.(map[string]any); m["name"] == "PYTHONPATH" {
			if v, ok := m["value"].(string); ok && v != "" {
				m["value"] = v + ":" + dir
				return env
			}
		}
	}
	return append(env, map[string]any{"name": "PYTHONPATH", "value": dir})
}

// HasCommands mirrors the operator's MiniClusterContainer.HasCommands.
func (ct miniClusterContainer) HasCommands() bool {
	cm := ct.Commands
	return cm.Pre != "" || cm.BrokerPre != "" || cm.WorkerPre != "" || cm.Init != "" || cm.Post != "" || cm.Script != "" || cm.Prefix != ""
}

func envOf(ct miniClusterContainer) []any {
	var env []any
	for _, k := range sortedKeys(ct.Environment) {
		env = append(env, map[string]any{"name": k, "value": ct.Environment[k]})
	}
	for _, k := range sortedKeys(ct.Secrets) {
		s := ct.Secrets[k]
		env = append(env, map[string]any{"name": k, "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": s.Name, "key": s.Key}}})
	}
	return env
}

// volumes are a container's volumes as the operator makes them: volumes by name (once per pod)
// and the container's mounts.
func (c *converter) volumes(at string, ct miniClusterContainer, seen map[string]bool) (mounts, vols []any, err error) {
	for _, name := range sortedKeys(ct.Volumes) {
		v := ct.Volumes[name]
		where := at + ".volumes." + name
		src := corev1.VolumeSource{}
		switch {
		case v.CSIDriver != "":
			src.CSI = &corev1.CSIVolumeSource{Driver: v.CSIDriver, VolumeAttributes: v.CSIDriverAttributes}
		case v.SecretName != "":
			src.Secret = &corev1.SecretVolumeSource{SecretName: v.SecretName}
		case v.EmptyDir:
			ed := &corev1.EmptyDirVolumeSource{}
			switch v.EmptyDirMedium {
			case "":
			case "memory":
				ed.Medium = corev1.StorageMediumMemory
			default:
				return nil, nil, fmt.Errorf("%s.emptyDirMedium %q: the operator knows only \"memory\"", where, v.EmptyDirMedium)
			}
			if v.EmptyDirSizeLimit != "" {
				q, err := resource.ParseQuantity(v.EmptyDirSizeLimit)
				if err != nil {
					return nil, nil, fmt.Errorf("%s.emptyDirSizeLimit %q: %w", where, v.EmptyDirSizeLimit, err)
				}
				ed.SizeLimit = &q
			}
			src.EmptyDir = ed
		case v.HostPath != "":
			dir := corev1.HostPathDirectory
			src.HostPath = &corev1.HostPathVolumeSource{Path: v.HostPath, Type: &dir}
		case v.ConfigMapName != "":
			cm := &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: v.ConfigMapName}}
			for _, k := range sortedKeys(v.Items) {
				cm.Items = append(cm.Items, corev1.KeyToPath{Key: k, Path: v.Items[k]})
			}
			src.ConfigMap = cm
		case v.ClaimName != "":
			src.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.ClaimName}
		default:
			// The operator would reference a claim named "": an emptyDir holds the path instead.
			src.EmptyDir = &corev1.EmptyDirVolumeSource{}
		}
		mountPath := v.Path
		if v.EmptyDir {
			mountPath = "/dev/shm" // where the operator mounts every emptyDir volume
		}
		if mountPath == "" {
			if v.SecretName == "" && v.ConfigMapName == "" {
				return nil, nil, fmt.Errorf("%s.path is empty: say where to mount the volume", where)
			}
			return nil, nil, fmt.Errorf("%s.path is empty: the operator mounts a secret or configMap volume at its path; give one", where)
		}
		m := map[string]any{"name": name, "mountPath": mountPath}
		if v.ReadOnly {
			m["readOnly"] = true
		}
		mounts = append(mounts, m)
		if seen[name] {
			continue
		}
		seen[name] = true
		vols = append(vols, toAny(corev1.Volume{Name: name, VolumeSource: src}))
	}
	return mounts, vols, nil
}

// toAny turns a value into its JSON shape (maps, lists, scalars). It keeps every value the
// user wrote, false, 0 and "" too: the types' omitempty leaves out only what was not written.
func toAny(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		panic(err)
	}
	return integers(out)
}

// toMap is toAny of a struct: its fields that were written, by their JSON names.
func toMap(v any) map[string]any {
	m, _ := toAny(v).(map[string]any)
	return m
}

// integers turns the decoder's numbers into int64 (or float64 where they are not whole).
func integers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = integers(e)
		}
	case []any:
		for i := range x {
			x[i] = integers(x[i])
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

// Write writes the values as YAML, with a head comment saying how to install them.
func Write(r Result) ([]byte, error) {
	body, err := yaml.Marshal(r.Values)
	if err != nil {
		return nil, err
	}
	ns := ""
	if r.Namespace != "" {
		ns = " --namespace " + r.Namespace
	}
	head := fmt.Sprintf("# Values of the minicluster chart for the Flux Operator MiniCluster %q (%s).\n"+
		"# Install it under the same name, so that the brokers get the same host names:\n"+
		"#   helm install %s charts/minicluster%s -f THIS_FILE\n", r.Name, apiVersion, r.Name, ns)
	return append([]byte(head), body...), nil
}
