{{/* minicluster.validate fails with a message that names the value and the fix; it renders nothing. */}}
{{- define "minicluster.validate" -}}
{{- $name := include "minicluster.fullname" . -}}
{{- $size := int .Values.size -}}
{{- /* Kubernetes caps an Indexed Job's parallelism at 100,000 (it also bounds the Job's status). */ -}}
{{- $limit := 100000 -}}
{{- if gt $size $limit -}}
{{- fail (printf "size=%d is more than %d, the most pods an Indexed Job can run at once (Kubernetes' limit on its parallelism); set size to at most %d, or split the work across several MiniClusters" $size $limit $limit) -}}
{{- end -}}
{{- if gt (int .Values.maxSize) $limit -}}
{{- fail (printf "maxSize=%d is more than %d, the most pods an Indexed Job can run at once (Kubernetes' limit on its parallelism), so the brokers past it could never start; set maxSize to at most %d (or 0: the larger of size and 16)" (int .Values.maxSize) $limit $limit) -}}
{{- end -}}
{{- $max := include "minicluster.maxSize" . | int -}}
{{- if gt $size $max -}}
{{- fail (printf "size=%d is larger than maxSize=%d, the number of hosts broker.toml lists; set maxSize to %d or more (on a running MiniCluster maxSize is fixed at install: uninstall and install again to grow past it)" $size $max $size) -}}
{{- end -}}
{{- if not (regexMatch "^[a-z]([-a-z0-9]*[a-z0-9])?$" $name) -}}
{{- fail (printf "release name %q cannot name the Service and the pods' hostnames: it must be a DNS label (lower-case letters, digits and '-', starting with a letter); install with another name" $name) -}}
{{- end -}}
{{- $lastHost := printf "%s-%d" $name (sub $max 1) -}}
{{- if gt (len $lastHost) 63 -}}
{{- fail (printf "hostname %q (release name %q, maxSize=%d) is %d characters; a hostname may have at most 63: use a release name of at most %d characters" $lastHost $name $max (len $lastHost) (sub 62 (len (toString (sub $max 1))))) -}}
{{- end -}}
{{- if and (hasKey .Values "interactive") (not (kindIs "invalid" .Values.interactive)) -}}
{{- fail (printf "interactive=%v: the value interactive was removed; the mode follows from command alone (empty: the instance stays up, interactive; set: it runs the command and completes). Delete interactive from your values file (on helm upgrade --reuse-values, add --set interactive=null)" .Values.interactive) -}}
{{- end -}}
{{- if and (gt (int .Values.tasks) 0) (not .Values.command) -}}
{{- fail (printf "tasks=%d needs a command to run; set command or set tasks to 0" (int .Values.tasks)) -}}
{{- end -}}
{{- if and .Values.flux.view.enabled (eq .Values.flux.view.mode "image") (semverCompare "<1.33-0" .Capabilities.KubeVersion.Version) -}}
{{- fail (printf "flux.view.mode=image mounts the view image as an image volume, which needs Kubernetes >= 1.33 (on by default from 1.35); this cluster runs %s: set flux.view.mode=copy" .Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- if and (eq .Values.flux.scheduler "simple") (ne .Values.flux.queuePolicy "fcfs") -}}
{{- fail (printf "flux.queuePolicy=%s is a policy of Fluxion's queue, but flux.scheduler=simple (sched-simple has no queue policy): set flux.scheduler=fluxion, or leave flux.queuePolicy at fcfs" .Values.flux.queuePolicy) -}}
{{- end -}}
{{- with .Values.sharedMemory -}}
{{- if not (regexMatch "^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$" (toString .)) -}}
{{- fail (printf "sharedMemory=%q is not a Kubernetes quantity: give the size of /dev/shm such as 512Mi, 1Gi or 2G (or \"\" for the runtime's)" (toString .)) -}}
{{- end -}}
{{- end -}}
{{- with .Values.queue.name -}}
{{- if not (and (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .) (le (len .) 63)) -}}
{{- fail (printf "queue.name=%q is not a DNS label, so it cannot name a Kueue LocalQueue: use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit (the name of a LocalQueue in namespace %s: kubectl get localqueues -n %s)" . $.Release.Namespace $.Release.Namespace) -}}
{{- end -}}
{{- end -}}
{{- include "minicluster.validateUpgrade" . -}}
{{- end -}}

{{/* minicluster.validateUpgrade compares with the live Job: only size may change on a running MiniCluster. */}}
{{- define "minicluster.validateUpgrade" -}}
{{- $name := include "minicluster.fullname" . -}}
{{- $live := include "minicluster.liveJob" . | fromJson -}}
{{- if $live -}}
{{- $recreate := printf "Kubernetes cannot change a running Job's pod template, so only size can change on a running MiniCluster (up to its maxSize). To apply this change, recreate it: helm uninstall %s -n %s, then helm install again with the new values" $name .Release.Namespace -}}
{{- $liveQueue := dig "metadata" "labels" "kueue.x-k8s.io/queue-name" "" $live -}}
{{- if ne $liveQueue .Values.queue.name -}}
{{- fail (printf "queue.name=%q differs from the running MiniCluster's queue %q, which is fixed at install (Kueue does not move a started Job to another queue). %s" .Values.queue.name $liveQueue $recreate) -}}
{{- end -}}
{{- $liveMax := dig "metadata" "annotations" "minicluster.dev/max-size" "" $live -}}
{{- if and $liveMax (ne (int .Values.maxSize) 0) (ne (int .Values.maxSize) (int $liveMax)) -}}
{{- fail (printf "maxSize=%d differs from the running MiniCluster's maxSize=%s, which is fixed at install (it is the host list every broker has). %s" (int .Values.maxSize) $liveMax $recreate) -}}
{{- end -}}
{{- range (dig "spec" "template" "spec" "containers" list $live) -}}
{{- if and (eq .name "flux") (ne .image $.Values.image) -}}
{{- fail (printf "image=%q differs from the running MiniCluster's image %q. %s" $.Values.image .image $recreate) -}}
{{- end -}}
{{- end -}}
{{- $liveHash := dig "metadata" "annotations" "minicluster.dev/pod-template-hash" "" $live -}}
{{- if and $liveHash (ne $liveHash (include "minicluster.podTemplate" . | sha256sum)) -}}
{{- fail (printf "this upgrade changes the Job's pod template (command, tasks, env, resources, volumes, flux.* or another pod setting). %s" $recreate) -}}
{{- end -}}
{{- if not .Values.curve.existingSecret -}}
{{- $kind := ternary "ConfigMap" "Secret" (eq .Values.curve.storage "ConfigMap") -}}
{{- $cert := lookup "v1" $kind .Release.Namespace (include "minicluster.curveName" .) -}}
{{- if not (dig "data" "curve.cert" "" $cert) -}}
{{- fail (printf "the %s %s/%s with the CURVE certificate is missing or empty, but the MiniCluster %s is running with it: a new key would split the cluster, so none is made. Recreate the MiniCluster: helm uninstall %s -n %s, then helm install again" $kind .Release.Namespace (include "minicluster.curveName" .) $name $name .Release.Namespace) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
