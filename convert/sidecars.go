package convert

import (
	"fmt"
	"strings"
)

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
