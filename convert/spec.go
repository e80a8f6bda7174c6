package convert

import (
	"errors"
	"fmt"
	"strings"

	"github.com/minicluster/minicluster/internal/limits"
)

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
	// Every field the chart cannot take is reported, not the first alone.
	var errs []error
	if size < 1 || size > limits.MaxBrokers {
		errs = append(errs, fmt.Errorf("spec.size %d: the chart runs 1 to %d brokers", s.Size, limits.MaxBrokers))
	}
	c.set("size", int(size))
	if s.MaxSize != 0 && (s.MaxSize < size || s.MaxSize > limits.MaxBrokers) {
		errs = append(errs, fmt.Errorf("spec.maxSize %d: want size (%d) to %d", s.MaxSize, size, limits.MaxBrokers))
	}
	// The operator's maxSize defaults to size; the chart's would be max(size, 16).
	c.set("maxSize", int(max(s.MaxSize, size)))
	if s.BackoffLimit < 0 {
		errs = append(errs, fmt.Errorf("spec.backoffLimit %d: want 0 or more", s.BackoffLimit))
	}
	if s.BackoffLimit > 0 {
		c.set("job.backoffLimit", int(s.BackoffLimit))
	}
	if s.DeadlineSeconds != 0 && s.DeadlineSeconds != 31500000 {
		if s.DeadlineSeconds < 0 {
			errs = append(errs, fmt.Errorf("spec.deadlineSeconds %d: want a positive number of seconds", s.DeadlineSeconds))
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
	errs = append(errs, c.flux())
	c.pod()
	errs = append(errs, c.containers(int(size)), c.services())
	if err := errors.Join(errs...); err != nil {
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
