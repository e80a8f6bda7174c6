package convert

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

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
	var errs []error // the first of each container's
	for i, ct := range cs {
		at := fmt.Sprintf("spec.containers[%d]", i)
		mounts, vols, err := c.volumes(at, ct, seen)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		volumes = append(volumes, vols...)
		c.addPullSecret(ct.ImagePullSecret)
		env := envOf(ct)
		if i == runner {
			if err := c.runnerContainer(at, ct, size); err != nil {
				errs = append(errs, err)
				continue
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
				errs = append(errs, err)
				continue
			}
			fluxContainers = append(fluxContainers, fc)
			continue
		}
		sc, err := c.sidecar(at, ct, env, mounts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sidecars = append(sidecars, sc)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
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
