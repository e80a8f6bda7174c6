package convert

import (
	"fmt"
	"io"
	"strings"
)

// Status says what becomes of a MiniCluster field.
type Status string

const (
	// Mapped: the field becomes the chart values in Field.Values.
	Mapped Status = "mapped"
	// Same: the chart does what the field asks without a value (Field.Why says why).
	Same Status = "same"
	// Refused: a MiniCluster that sets the field is not converted (Field.Why says what to do).
	Refused Status = "refused"
)

// Field is one field of the v1alpha2 MiniClusterSpec (or a whole subtree of it) and what the
// converter makes of it. Paths name list items with [] and map values with {}.
type Field struct {
	Path   string
	Status Status
	Values string // Mapped: the chart values it sets
	Why    string // Same and Refused: the reason, and for Refused what to do instead
	// Default is the operator's own default: a Refused field set to it is accepted.
	Default string
}

// containers[] fields apply to the container that runs Flux (the only one, or the one with
// runFlux) and to the others, which become sidecars.
var Fields = []Field{
	{Path: "spec.size", Status: Mapped, Values: "size"},
	{Path: "spec.maxSize", Status: Mapped, Values: "maxSize", Why: "without it: size, the operator's default (the chart's own default is the larger of size and 16)"},
	{Path: "spec.tasks", Status: Mapped, Values: "tasks (or the command)", Why: "the operator submits the command as a job of this many tasks (1 by default): 0 and at least size become the chart's tasks (flux submit -N SIZE -n TASKS; 0: one a broker); fewer than size, the default 1 too, make the command the operator's own submit line, `flux submit -nTASKS --quiet --watch COMMAND`"},
	{Path: "spec.interactive", Status: Mapped, Values: "command (empty)"},
	{Path: "spec.deadlineSeconds", Status: Mapped, Values: "job.activeDeadlineSeconds", Default: "31500000"},
	{Path: "spec.backoffLimit", Status: Mapped, Values: "job.backoffLimit"},
	{Path: "spec.cleanup", Status: Mapped, Values: "job.ttlSecondsAfterFinished (0)"},
	{Path: "spec.minSize", Status: Refused, Why: "the chart starts Flux once all `size` brokers are up (broker.quorum = size); set size to the number of brokers to wait for"},
	{Path: "spec.network.headlessName", Status: Refused, Why: "the chart names the headless Service after the release; drop it (brokers are <release>-<i>.<release>)"},
	{Path: "spec.network.disableAffinity", Status: Same, Why: "the chart's default spread of brokers over nodes is soft (ScheduleAnyway): brokers share nodes when they must"},
	{Path: "spec.jobLabels", Status: Mapped, Values: "jobLabels"},
	{Path: "spec.shareProcessNamespace", Status: Mapped, Values: "shareProcessNamespace"},
	{Path: "spec.archive.path", Status: Refused, Why: "use flux.state.enabled with a claim (flux.state.existingClaim): the lead restores and dumps Flux's content there"},
	{Path: "spec.logging.quiet", Status: Mapped, Values: "logging.quiet"},
	{Path: "spec.logging.strict", Status: Mapped, Values: "logging.strict"},
	{Path: "spec.logging.debug", Status: Mapped, Values: "logging.debug"},
	{Path: "spec.logging.zeromq", Status: Mapped, Values: "logging.zeromq"},
	{Path: "spec.logging.timed", Status: Mapped, Values: "logging.timed"},

	{Path: "spec.flux.container.image", Status: Mapped, Values: "flux.view.image"},
	{Path: "spec.flux.container.disable", Status: Mapped, Values: "flux.view.enabled (false)"},
	{Path: "spec.flux.container.mountPath", Status: Mapped, Values: "flux.view.mountPath", Default: "/mnt/flux"},
	{Path: "spec.flux.container.pullAlways", Status: Mapped, Values: "flux.view.imagePullPolicy (Always)"},
	{Path: "spec.flux.container.imagePullSecret", Status: Mapped, Values: "imagePullSecrets"},
	{Path: "spec.flux.container.name", Status: Refused, Default: "flux-view", Why: "the chart names the view's container flux-view; drop it"},
	{Path: "spec.flux.container.workingDir", Status: Same, Why: "the view's container only copies Flux: its working directory changes nothing"},
	{Path: "spec.flux.container.pythonPath", Status: Mapped, Values: "env (PYTHONPATH)", Why: "appended to the application container's PYTHONPATH, as the operator appends it; the view's own site-packages stay first, where the operator leaves them out when this is set"},
	{Path: "spec.flux.container.resources", Status: Mapped, Values: "flux.view.resources", Why: "the container that copies the view into each pod (flux.view.mode copy); where Kubernetes mounts the view as an image volume there is no such container"},
	{Path: "spec.flux.container.securityContext", Status: Mapped, Values: "flux.view.securityContext", Why: "the container that copies the view (flux.view.mode copy); without it, it runs with the application container's"},
	{Path: "spec.flux.arch", Status: Same, Why: "the chart downloads nothing at run time: the images' architecture is the node's"},
	{Path: "spec.flux.submitCommand", Status: Mapped, Values: "command", Why: "the command becomes the operator's own submit line with SUBMITCOMMAND in place of flux submit (tasks 0)"},
	{Path: "spec.flux.wrap", Status: Mapped, Values: "flux.wrap"},
	{Path: "spec.flux.connectTimeout", Status: Mapped, Values: "flux.connectTimeout"},
	{Path: "spec.flux.optionFlags", Status: Mapped, Values: "command", Why: "the command becomes the operator's own submit line, `flux submit NODES OPTIONFLAGS --quiet --watch COMMAND` (tasks 0)"},
	{Path: "spec.flux.minimalService", Status: Mapped, Values: "flux.minimalService, flux.topology (\"\": flat)", Why: "the lead alone has a DNS name, so every worker connects to it directly: the tree is flat, as the operator's"},
	{Path: "spec.flux.disableSocket", Status: Same, Why: "the chart always pins each broker's socket at /minicluster/run/flux/local (FLUX_URI)"},
	{Path: "spec.flux.noWaitSocket", Status: Mapped, Values: "fluxContainers[].waitSocket (false)"},
	{Path: "spec.flux.topology", Status: Mapped, Values: "flux.topology"},
	{Path: "spec.flux.completeWorkers", Status: Mapped, Values: "flux.completeWorkers"},
	{Path: "spec.flux.logLevel", Status: Mapped, Values: "flux.logLevel"},
	{Path: "spec.flux.curveCert", Status: Mapped, Values: "curve.cert", Why: "kept in a Secret that every broker reads; the keygen Job makes none"},
	{Path: "spec.flux.scheduler.simple", Status: Mapped, Values: "flux.scheduler (simple)", Why: "without it the chart loads Fluxion; the operator means to as well, but its brokers start flux-core 0.88 with sched-simple (its FLUX_RC_EXTRA points one level too deep into the view)"},
	{Path: "spec.flux.scheduler.queuePolicy", Status: Mapped, Values: "flux.queuePolicy"},
	{Path: "spec.flux.mungeSecret", Status: Same, Why: "the operator reads no Secret of this name (nothing in its controller uses the field); for a munge key, set munge.enabled: the chart makes one and mounts it at /etc/munge/munge.key"},
	{Path: "spec.flux.bursting", Status: Refused, Why: "bursting to other clusters needs brokers outside this cluster, which the chart does not manage; run one MiniCluster per cluster"},
	{Path: "spec.flux.brokerConfig", Status: Refused, Why: "the operator's broker.toml names its own paths and Service; use flux.brokerOptions for broker attributes (-Skey=value), or flux.brokerConfig with the chart's paths (see `helm template`)"},
	{Path: "spec.flux.environment", Status: Mapped, Values: "env"},

	{Path: "spec.pod.annotations", Status: Mapped, Values: "podAnnotations"},
	{Path: "spec.pod.labels", Status: Mapped, Values: "podLabels"},
	{Path: "spec.pod.restartPolicy", Status: Refused, Why: "the chart's brokers restart inside the pod and the Job replaces failed pods (restartPolicy Never); drop it"},
	{Path: "spec.pod.serviceAccountName", Status: Mapped, Values: "serviceAccountName"},
	{Path: "spec.pod.runtimeClassName", Status: Mapped, Values: "runtimeClassName"},
	{Path: "spec.pod.automountServiceAccountToken", Status: Mapped, Values: "automountServiceAccountToken", Why: "the operator sets it on every pod, false unless given: false is written when serviceAccountName is set (the chart's own account gets no token anyway)"},
	{Path: "spec.pod.schedulerName", Status: Mapped, Values: "schedulerName"},
	{Path: "spec.pod.nodeSelector", Status: Mapped, Values: "nodeSelector"},
	{Path: "spec.pod.nodeAffinity", Status: Mapped, Values: "affinity.nodeAffinity (required, In)"},
	{Path: "spec.pod.tolerations[].key", Status: Mapped, Values: "tolerations[].key"},
	{Path: "spec.pod.tolerations[].effect", Status: Mapped, Values: "tolerations[].effect"},
	{Path: "spec.pod.tolerations[].operator", Status: Mapped, Values: "tolerations[].operator"},
	{Path: "spec.pod.tolerations[].value", Status: Mapped, Values: "tolerations[].value"},
	{Path: "spec.pod.dnsPolicy", Status: Mapped, Values: "dnsPolicy"},
	{Path: "spec.pod.hostIPC", Status: Mapped, Values: "hostIPC"},
	{Path: "spec.pod.hostPID", Status: Mapped, Values: "hostPID"},
	{Path: "spec.pod.resources", Status: Refused, Why: "the operator writes it as the pods' overhead, which Kubernetes refuses (Pod Overhead set without corresponding RuntimeClass defined Overhead) unless it is the overhead of the pods' RuntimeClass, which Kubernetes then sets itself: drop it, and give runtimeClassName a RuntimeClass with that overhead"},
	{Path: "spec.pod.securityContext", Status: Mapped, Values: "podSecurityContext"},

	{Path: "spec.containers[].image", Status: Mapped, Values: "image; sidecars[].image; fluxContainers[].image"},
	{Path: "spec.containers[].name", Status: Mapped, Values: "sidecars[].name; fluxContainers[].name (the Flux container is always flux)"},
	{Path: "spec.containers[].command", Status: Mapped, Values: "command; fluxContainers[].command"},
	{Path: "spec.containers[].workingDir", Status: Mapped, Values: "workingDir; sidecars[].workingDir; fluxContainers[].workingDir"},
	{Path: "spec.containers[].pullAlways", Status: Mapped, Values: "imagePullPolicy (Always); sidecars[].imagePullPolicy; fluxContainers[].imagePullPolicy"},
	{Path: "spec.containers[].imagePullPolicy", Status: Mapped, Values: "imagePullPolicy; sidecars[].imagePullPolicy; fluxContainers[].imagePullPolicy"},
	{Path: "spec.containers[].imagePullSecret", Status: Mapped, Values: "imagePullSecrets"},
	{Path: "spec.containers[].ports", Status: Mapped, Values: "sidecars[].ports; fluxContainers[].ports (the Flux container's are informational: same pod network)"},
	{Path: "spec.containers[].environment", Status: Mapped, Values: "env; sidecars[].env; fluxContainers[].env"},
	{Path: "spec.containers[].secrets{}.name", Status: Mapped, Values: "env[].valueFrom.secretKeyRef.name"},
	{Path: "spec.containers[].secrets{}.key", Status: Mapped, Values: "env[].valueFrom.secretKeyRef.key"},
	{Path: "spec.containers[].runFlux", Status: Mapped, Values: "which container becomes the chart's (the others become fluxContainers, or sidecars with noWrapEntrypoint)"},
	{Path: "spec.containers[].noWrapEntrypoint", Status: Mapped, Values: "sidecars[] (run as the image gives them); without it: fluxContainers[] (with the broker's Flux)"},
	{Path: "spec.containers[].resources", Status: Mapped, Values: "resources; sidecars[].resources; fluxContainers[].resources"},
	{Path: "spec.containers[].securityContext", Status: Mapped, Values: "securityContext; sidecars[].securityContext; fluxContainers[].securityContext"},
	{Path: "spec.containers[].launcher", Status: Mapped, Values: "tasks (0: the command is the instance's initial program, as the operator gives a launcher to flux start)"},
	{Path: "spec.containers[].batch", Status: Mapped, Values: "batch.enabled; tasks (the operator's, for the batch's allocation)"},
	{Path: "spec.containers[].batchRaw", Status: Mapped, Values: "batch.raw"},
	{Path: "spec.containers[].logs", Status: Mapped, Values: "batch.outputDir"},
	{Path: "spec.containers[].lifeCycle.postStartExec", Status: Mapped, Values: "lifecycle.postStart; sidecars[].lifecycle.postStart; fluxContainers[].lifecycle.postStart", Why: "run with /bin/sh -c as the container starts (a Kubernetes postStart exec hook; the operator's runs the string as one program, so a script's path works in both)"},
	{Path: "spec.containers[].lifeCycle.preStopExec", Status: Mapped, Values: "lifecycle.preStop; sidecars[].lifecycle.preStop; fluxContainers[].lifecycle.preStop", Why: "run with /bin/sh -c before the container is stopped (a Kubernetes preStop exec hook)"},
	{Path: "spec.containers[].commands.prefix", Status: Mapped, Values: "commands.prefix"},
	{Path: "spec.containers[].commands.script", Status: Mapped, Values: "command; fluxContainers[].command (the script, when there is no command)", Why: "as the operator runs it: written through an unquoted heredoc (/bin/sh expands $VAR, $(...) and \\$ in it first), run with bash as the submitted job, `flux submit NODES --quiet --watch /bin/bash -c \"$(cat <<EOF ... EOF)\"`"},
	{Path: "spec.containers[].commands.init", Status: Mapped, Values: "commands.init; fluxContainers[].command (first)", Why: "run in the shell that starts the broker, as the operator's: what it exports, the directory it changes to and what it sources reach Flux and the command"},
	{Path: "spec.containers[].commands.pre", Status: Mapped, Values: "commands.pre", Why: "run in the shell that starts the broker, as init"},
	{Path: "spec.containers[].commands.post", Status: Mapped, Values: "commands.post; fluxContainers[].command (last, or alone: run once the broker's socket exists)"},
	{Path: "spec.containers[].commands.workerPre", Status: Mapped, Values: "commands.workerPre"},
	{Path: "spec.containers[].commands.brokerPre", Status: Mapped, Values: "commands.brokerPre"},
	{Path: "spec.containers[].commands.servicePre", Status: Mapped, Values: "fluxContainers[].command (before the command)", Why: "only the containers that use the broker's Flux run it, as the operator's wrapped containers do"},
	{Path: "spec.containers[].volumes{}.path", Status: Mapped, Values: "volumeMounts[].mountPath (a volume with no source: an emptyDir)"},
	{Path: "spec.containers[].volumes{}.readOnly", Status: Mapped, Values: "volumeMounts[].readOnly"},
	{Path: "spec.containers[].volumes{}.claimName", Status: Mapped, Values: "volumes[].persistentVolumeClaim.claimName"},
	{Path: "spec.containers[].volumes{}.hostPath", Status: Mapped, Values: "volumes[].hostPath (type Directory)"},
	{Path: "spec.containers[].volumes{}.configMapName", Status: Mapped, Values: "volumes[].configMap.name"},
	{Path: "spec.containers[].volumes{}.items", Status: Mapped, Values: "volumes[].configMap.items"},
	{Path: "spec.containers[].volumes{}.secretName", Status: Mapped, Values: "volumes[].secret.secretName"},
	{Path: "spec.containers[].volumes{}.emptyDir", Status: Mapped, Values: "volumes[].emptyDir mounted at /dev/shm, as the operator mounts it"},
	{Path: "spec.containers[].volumes{}.emptyDirMedium", Status: Mapped, Values: "volumes[].emptyDir.medium (memory: Memory)"},
	{Path: "spec.containers[].volumes{}.emptyDirSizeLimit", Status: Mapped, Values: "volumes[].emptyDir.sizeLimit"},
	{Path: "spec.containers[].volumes{}.csiDriver", Status: Mapped, Values: "volumes[].csi.driver"},
	{Path: "spec.containers[].volumes{}.csiDriverAttributes", Status: Mapped, Values: "volumes[].csi.volumeAttributes"},

	{Path: "spec.services", Status: Mapped, Values: "services; servicesVolumes", Why: "a Deployment of one pod and a headless Service, both <release>-services: the brokers reach it as <release>-services (FQDN <release>-services.<namespace>.svc.<domain>); the converter rewrites the operator's names of it, <name>-services.<headlessName> (by default <name>) and older docs' <name>-services.flux-service, with or without the namespace after them, to that in every value"},
}

// field finds the entry that covers path: the entry itself or the nearest enclosing one.
func field(path string) (Field, bool) {
	for p := path; p != ""; {
		for _, f := range Fields {
			if f.Path == p {
				return f, true
			}
		}
		i := strings.LastIndexAny(p, ".[{")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return Field{}, false
}

// WriteTable writes the field table as Markdown: every field, what it becomes or why nothing.
func WriteTable(w io.Writer) error {
	counts := map[Status]int{}
	for _, f := range Fields {
		counts[f.Status]++
	}
	if _, err := fmt.Fprintf(w, "%d fields: %d mapped to values, %d the same without a value, %d refused.\n\n| Field | Becomes | Why |\n|---|---|---|\n",
		len(Fields), counts[Mapped], counts[Same], counts[Refused]); err != nil {
		return err
	}
	for _, f := range Fields {
		becomes := "—"
		switch f.Status {
		case Mapped:
			becomes = "`" + strings.ReplaceAll(f.Values, "; ", "`, `") + "`"
		case Same:
			becomes = "(nothing needed)"
		case Refused:
			becomes = "refused"
			if f.Default != "" {
				becomes += " (accepted at " + f.Default + ")"
			}
		}
		why := strings.ReplaceAll(f.Why, "|", `\|`)
		if _, err := fmt.Fprintf(w, "| `%s` | %s | %s |\n", f.Path, becomes, why); err != nil {
			return err
		}
	}
	return nil
}
