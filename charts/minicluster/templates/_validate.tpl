{{/* minicluster.validate fails with a message that names the value and the fix; it renders nothing. */}}
{{- define "minicluster.validate" -}}
{{- $name := include "minicluster.fullname" . -}}
{{- $size := int .Values.size -}}
{{- /* Kubernetes caps an Indexed Job's parallelism at 100,000 (it also bounds the Job's status). */ -}}
{{- $limit := 100000 -}}
{{- if gt $size $limit -}}
{{- fail (printf (print
  "size=%d is more than %d, the most pods an Indexed Job can run at once (Kubernetes' limit on its "
  "parallelism); set size to at most %d, or split the work across several MiniClusters")
  $size $limit $limit) -}}
{{- end -}}
{{- if gt (int .Values.maxSize) $limit -}}
{{- fail (printf (print
  "maxSize=%d is more than %d, the most pods an Indexed Job can run at once (Kubernetes' limit on its "
  "parallelism), so the brokers past it could never start; set maxSize to at most %d (or 0: the larger "
  "of size and 16)")
  (int .Values.maxSize) $limit $limit) -}}
{{- end -}}
{{- $max := include "minicluster.maxSize" . | int -}}
{{- if gt $size $max -}}
{{- fail (printf (print
  "size=%d is larger than maxSize=%d, the number of hosts broker.toml lists; set maxSize to %d or more "
  "(on a running MiniCluster maxSize is fixed at install: uninstall and install again to grow past it)")
  $size $max $size) -}}
{{- end -}}
{{- include "minicluster.validateAutoscale" . -}}
{{- if eq (int .Values.flux.readinessPort) (int .Values.flux.port) -}}
{{- fail (printf "flux.readinessPort=%d is flux.port too: the broker listens there; set flux.readinessPort to another port" (int .Values.flux.readinessPort)) -}}
{{- end -}}
{{- if not (regexMatch "^[a-z]([-a-z0-9]*[a-z0-9])?$" $name) -}}
{{- fail (printf (print
  "release name %q cannot name the Service and the pods' hostnames: it must be a DNS label (lower-case "
  "letters, digits and '-', starting with a letter); install with another name")
  $name) -}}
{{- end -}}
{{- $lastHost := printf "%s-%d" $name (sub $max 1) -}}
{{- if gt (len $lastHost) 63 -}}
{{- fail (printf (print
  "hostname %q (release name %q, maxSize=%d) is %d characters; a hostname may have at most 63: use a "
  "release name of at most %d characters")
  $lastHost $name $max (len $lastHost) (sub 62 (len (toString (sub $max 1))))) -}}
{{- end -}}
{{- if and (hasKey .Values "interactive") (not (kindIs "invalid" .Values.interactive)) -}}
{{- fail (printf (print
  "interactive=%v: the value interactive was removed; the mode follows from command alone (empty: the "
  "instance stays up, interactive; set: it runs the command and completes). Delete interactive from "
  "your values file (on helm upgrade --reuse-values, add --set interactive=null)")
  .Values.interactive) -}}
{{- end -}}
{{- if and (gt (int .Values.tasks) 0) (not .Values.command) -}}
{{- fail (printf "tasks=%d needs a command to run; set command or set tasks to 0" (int .Values.tasks)) -}}
{{- end -}}
{{- if and .Values.flux.view.enabled (eq .Values.flux.view.mode "image") (semverCompare "<1.33-0" .Capabilities.KubeVersion.Version) -}}
{{- fail (printf (print
  "flux.view.mode=image mounts the view image as an image volume, which needs Kubernetes >= 1.33 (on "
  "by default from 1.35); this cluster runs %s: set flux.view.mode=copy")
  .Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- if and (eq .Values.flux.scheduler "simple") (ne .Values.flux.queuePolicy "fcfs") -}}
{{- fail (printf (print
  "flux.queuePolicy=%s is a policy of Fluxion's queue, but flux.scheduler=simple (sched-simple has no "
  "queue policy): set flux.scheduler=fluxion, or leave flux.queuePolicy at fcfs")
  .Values.flux.queuePolicy) -}}
{{- end -}}
{{- with .Values.sharedMemory -}}
{{- if not (regexMatch "^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$" (toString .)) -}}
{{- fail (printf "sharedMemory=%q is not a Kubernetes quantity: give the size of /dev/shm such as 512Mi, 1Gi or 2G (or \"\" for the runtime's)" (toString .)) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.flux.minimalService .Values.flux.topology -}}
{{- fail (printf (print
  "flux.minimalService=true gives the lead broker alone a DNS name, so every worker must connect to "
  "the lead directly, but flux.topology=%q makes some workers the parents of others (which they could "
  "not reach by name): set flux.topology=\"\" (flat) as well")
  .Values.flux.topology) -}}
{{- end -}}
{{- include "minicluster.validateCurve" . -}}
{{- include "minicluster.validateServices" . -}}
{{- include "minicluster.validatePod" . -}}
{{- include "minicluster.validateRestricted" . -}}
{{- with .Values.queue.name -}}
{{- if not (and (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .) (le (len .) 63)) -}}
{{- fail (printf (print
  "queue.name=%q is not a DNS label, so it cannot name a Kueue LocalQueue: use at most 63 lower-case "
  "letters, digits and '-', starting and ending with a letter or digit (the name of a LocalQueue in "
  "namespace %s: kubectl get localqueues -n %s)")
  . $.Release.Namespace $.Release.Namespace) -}}
{{- end -}}
{{- end -}}
{{- include "minicluster.validateState" . -}}
{{- include "minicluster.validateAPI" . -}}
{{- include "minicluster.validateServiceAccount" . -}}
{{- include "minicluster.validateUpgrade" . -}}
{{- end -}}

{{/* minicluster.validateAPI checks api: only a persistent MiniCluster serves it, on a port of its own. */}}
{{- define "minicluster.validateAPI" -}}
{{- $api := .Values.api -}}
{{- if $api.enabled -}}
{{- if .Values.command -}}
{{- fail (printf (print
  "api.enabled=true with command=%q: the API serves a persistent MiniCluster, and with a command the "
  "MiniCluster is ephemeral (it ends with the command, leaving nothing to serve). Unset command "
  "(submit it through the API instead), or set api.enabled=false")
  .Values.command) -}}
{{- end -}}
{{- if eq (int $api.port) (int .Values.flux.port) -}}
{{- fail (printf "api.port=%d is flux.port, the brokers' own port: give the API another port (default 5000)" (int $api.port)) -}}
{{- end -}}
{{- if eq (int $api.port) (int .Values.flux.readinessPort) -}}
{{- fail (printf "api.port=%d is flux.readinessPort, where the keys container answers the brokers' readiness probe: give the API another port (default 5000)" (int $api.port)) -}}
{{- end -}}
{{- $subdomain := "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$" -}}
{{- range $key, $v := dict "api.existingSecret" $api.existingSecret "api.tls.secretName" $api.tls.secretName -}}
{{- if and $v (not (regexMatch $subdomain $v)) -}}
{{- fail (printf (print
  "%s=%q is not a valid Secret name (a DNS subdomain: lower-case letters, digits, '-' and '.', "
  "starting and ending with a letter or digit): give the name of a Secret in namespace %s")
  $key $v $.Release.Namespace) -}}
{{- end -}}
{{- end -}}
{{- if and $api.existingSecret (not $api.requireAuth) -}}
{{- fail (printf "api.existingSecret=%q with api.requireAuth=false: the credentials would not be used; set api.requireAuth=true, or unset api.existingSecret" $api.existingSecret) -}}
{{- end -}}
{{- $lifetime := $api.tokenLifetime | toString -}}
{{- $seconds := mul (trimSuffix "s" (trimSuffix "m" (trimSuffix "h" $lifetime)) | int) (get (dict "s" 1 "m" 60 "h" 3600) (substr (sub (len $lifetime) 1 | int) (len $lifetime) $lifetime)) -}}
{{- if gt $seconds 86400 -}}
{{- fail (printf "api.tokenLifetime=%s is longer than 24h, the longest an access token may live (a token that leaks is good that long): give at most 24h" $lifetime) -}}
{{- end -}}
{{- if and (not $api.requireAuth) (not $api.acknowledgeNoAuth) -}}
{{- fail (printf (print
  "api.requireAuth=false serves the API without credentials: anyone who reaches port %d (from any pod "
  "the NetworkPolicy lets in, or any namespace where none is enforced) runs jobs as the instance's "
  "user. Set api.requireAuth=true (the default), or set api.acknowledgeNoAuth=true as well to confirm "
  "it")
  (int $api.port)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* minicluster.validateServiceAccount refuses a serviceAccountName the chart's key Role would
make a way into other releases' keys: the namespace's default account (every pod that names none
runs as it) and an account another MiniCluster's brokers already run as (both releases could then
read each other's CURVE and munge keys and delete each other's Jobs). */}}
{{- define "minicluster.validateServiceAccount" -}}
{{- $sa := .Values.serviceAccountName -}}
{{- if $sa -}}
{{- if eq $sa "default" -}}
{{- fail (printf (print
  "serviceAccountName=default: every pod of namespace %s that names no account runs as it, and the "
  "chart lets the brokers' account read this release's CURVE and munge keys; create an account for "
  "this release alone (kubectl create serviceaccount %s-flux -n %s) and name it, or leave "
  "serviceAccountName empty for the chart's own")
  .Release.Namespace .Release.Name .Release.Namespace) -}}
{{- end -}}
{{- range (lookup "rbac.authorization.k8s.io/v1" "RoleBinding" .Release.Namespace "").items -}}
{{- $binding := .metadata.name -}}
{{- $owner := dig "metadata" "annotations" "meta.helm.sh/release-name" "" . -}}
{{- if and (eq (dig "metadata" "labels" "app.kubernetes.io/component" "" .) "broker") (hasPrefix "minicluster-" (dig "metadata" "labels" "helm.sh/chart" "" .)) $owner (ne $owner $.Release.Name) -}}
{{- range .subjects -}}
{{- if and (eq .kind "ServiceAccount") (eq .name $sa) (eq (.namespace | default $.Release.Namespace) $.Release.Namespace) -}}
{{- fail (printf (print
  "serviceAccountName=%s is already the account of the MiniCluster %s in namespace %s (RoleBinding "
  "%s): sharing it would let each release read the other's CURVE and munge keys and delete the other's "
  "Job. Give this release an account of its own (kubectl create serviceaccount %s-flux -n %s), or "
  "leave serviceAccountName empty for the chart's own")
  $sa $owner $.Release.Namespace $binding $.Release.Name $.Release.Namespace) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* minicluster.stateSummary is what of flux.state is fixed at install (the Job's minicluster.dev/state annotation); empty when state is off. */}}
{{- define "minicluster.stateSummary" -}}
{{- if .Values.flux.state.enabled -}}
claim={{ include "minicluster.stateClaimName" . }},dumpTimeoutSeconds={{ int .Values.flux.state.dumpTimeoutSeconds }}
{{- end -}}
{{- end -}}

{{/* minicluster.validateState checks flux.state: a claim to keep it in, valid names and size, and a claim kept from an earlier install that matches. */}}
{{- define "minicluster.validateState" -}}
{{- $state := .Values.flux.state -}}
{{- if $state.enabled -}}
{{- $subdomain := "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$" -}}
{{- $claim := include "minicluster.stateClaimName" . -}}
{{- if and (not $state.existingClaim) (not $state.storageClassName) -}}
{{- fail (printf (print
  "flux.state.enabled=true but the state has no claim to live in (state without a claim): set "
  "flux.state.existingClaim to a PersistentVolumeClaim of namespace %s, or flux.state.storageClassName "
  "to a storage class (kubectl get storageclass) for the chart to make the claim %s")
  .Release.Namespace $claim) -}}
{{- end -}}
{{- if and $state.existingClaim $state.storageClassName -}}
{{- fail (printf (print
  "flux.state.existingClaim=%q and flux.state.storageClassName=%q: the chart makes a claim with the "
  "storage class only when it has none of yours; set one of them")
  $state.existingClaim $state.storageClassName) -}}
{{- end -}}
{{- if and $state.existingClaim (or (gt (len $state.existingClaim) 253) (not (regexMatch $subdomain $state.existingClaim))) -}}
{{- fail (printf (print
  "flux.state.existingClaim=%q is not a valid PersistentVolumeClaim name (a DNS subdomain: lower-case "
  "letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters): "
  "give the name of a claim in namespace %s (kubectl get pvc -n %s)")
  $state.existingClaim .Release.Namespace .Release.Namespace) -}}
{{- end -}}
{{- if and $state.storageClassName (or (gt (len $state.storageClassName) 253) (not (regexMatch $subdomain $state.storageClassName))) -}}
{{- fail (printf "flux.state.storageClassName=%q is not a valid storage class name (a DNS subdomain): give one that kubectl get storageclass lists" $state.storageClassName) -}}
{{- end -}}
{{- if not $state.existingClaim -}}
{{- $size := toString $state.size -}}
{{- if not (regexMatch "^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$" $size) -}}
{{- fail (printf "flux.state.size=%q is not a Kubernetes quantity: give the size of the claim the chart makes, such as 1Gi or 500Mi" $size) -}}
{{- end -}}
{{- /* A claim kept from an earlier install (helm.sh/resource-policy: keep) is reused as it is. */ -}}
{{- with lookup "v1" "PersistentVolumeClaim" .Release.Namespace $claim -}}
{{- $delete := printf "or, to start from an empty state, delete it first: kubectl delete pvc -n %s %s" $.Release.Namespace $claim -}}
{{- $class := dig "spec" "storageClassName" "" . -}}
{{- if ne $class $state.storageClassName -}}
{{- fail (printf (print
  "flux.state.storageClassName=%s, but the claim %s kept from an earlier install (with its state) has "
  "storage class %s, which cannot change: set flux.state.storageClassName=%s to restore that state, %s")
  $state.storageClassName $claim $class $class $delete) -}}
{{- end -}}
{{- $had := dig "spec" "resources" "requests" "storage" "" . | toString -}}
{{- if ne $had $size -}}
{{- fail (printf "flux.state.size=%s, but the claim %s kept from an earlier install (with its state) asks for %s: set flux.state.size=%s to restore that state, %s" $size $claim $had $had $delete) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* minicluster.validatePod checks the pod settings the Flux Operator has beside the chart's other values. */}}
{{- define "minicluster.validatePod" -}}
{{- $subdomain := "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$" -}}
{{- range $key, $fix := dict
  "schedulerName" "the name a scheduler of the cluster answers to (its profile's schedulerName)"
  "priorityClassName" "the name of a PriorityClass (kubectl get priorityclasses)"
  "runtimeClassName" "the name of a RuntimeClass (kubectl get runtimeclasses)" -}}
{{- $v := index $.Values $key | default "" | toString -}}
{{- if and $v (or (gt (len $v) 253) (not (regexMatch $subdomain $v))) -}}
{{- fail (printf (print
  "%s=%q is not a DNS subdomain (lower-case letters, digits, '-' and '.', starting and ending with a "
  "letter or digit, at most 253 characters): give %s, or \"\" for the default")
  $key $v $fix) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.hostIPC .Values.sharedMemory -}}
{{- fail (printf (print
  "hostIPC=true gives the pods the node's /dev/shm, and sharedMemory=%q would hide it behind a "
  "/dev/shm volume of the pod's own: set one of them (sharedMemory=\"\" to share the node's)")
  (toString .Values.sharedMemory)) -}}
{{- end -}}
{{- /* The brokers connect to <job>-<i>.<service>.<namespace>.svc.<clusterDomain>: only the cluster's DNS knows these names. */ -}}
{{- $fqdn := printf "%s-0.%s.%s.svc.%s" (include "minicluster.fullname" .) (include "minicluster.fullname" .) .Release.Namespace .Values.clusterDomain -}}
{{- $policy := .Values.dnsPolicy | default "" -}}
{{- if eq $policy "Default" -}}
{{- fail (printf (print
  "dnsPolicy=Default gives the pods the node's resolver, which does not know the names the brokers "
  "find each other by (such as %s): leave dnsPolicy empty (ClusterFirst) and add nameservers, searches "
  "or options with dnsConfig, or use dnsPolicy=None with dnsConfig.nameservers set to the cluster DNS "
  "Service's address")
  $fqdn) -}}
{{- end -}}
{{- if and (eq $policy "None") (not (dig "nameservers" list (.Values.dnsConfig | default dict))) -}}
{{- fail (printf (print
  "dnsPolicy=None gives the pods only what dnsConfig lists, and dnsConfig.nameservers is empty: the "
  "brokers could not resolve each other (such as %s). Set dnsConfig.nameservers to the cluster DNS "
  "Service's address (kubectl get service -n kube-system kube-dns), or leave dnsPolicy empty "
  "(ClusterFirst) and add to it with dnsConfig")
  $fqdn) -}}
{{- end -}}
{{- include "minicluster.validateExtraContainers" . -}}
{{- include "minicluster.validateGracePeriod" . -}}
{{- end -}}

{{/* minicluster.validateExtraContainers checks initContainers, sidecars and fluxContainers: names unique in the pod and not the chart's; sidecars need Kubernetes >= 1.29. */}}
{{- define "minicluster.validateExtraContainers" -}}
{{- $reserved := list "flux" "flux-view" "keys" -}}
{{- $seen := dict -}}
{{- range $key := list "initContainers" "sidecars" "fluxContainers" -}}
{{- range $i, $c := (index $.Values $key | default list) -}}
{{- $where := printf "%s[%d]" $key $i -}}
{{- $name := $c.name | toString -}}
{{- if or (gt (len $name) 63) (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $name)) -}}
{{- fail (printf "%s.name=%q is not a DNS label (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters): rename the container" $where $name) -}}
{{- end -}}
{{- if has $name $reserved -}}
{{- fail (printf "%s.name=%q is the name of one of the chart's own containers (flux, flux-view, keys): give the container another name" $where $name) -}}
{{- end -}}
{{- with index $seen $name -}}
{{- fail (printf "%s.name=%q is also the name of %s: the containers of a pod need names of their own; rename one" $where $name .) -}}
{{- end -}}
{{- $_ := set $seen $name $where -}}
{{- $restart := $c.restartPolicy | default "" | toString -}}
{{- if and (eq $key "sidecars") $restart (ne $restart "Always") -}}
{{- fail (printf "%s.restartPolicy=%s: a sidecar always restarts (the chart sets restartPolicy Always); a container that runs once before the broker belongs in initContainers" $where $restart) -}}
{{- end -}}
{{- if and (or (eq $key "sidecars") (eq $restart "Always")) (semverCompare "<1.29-0" $.Capabilities.KubeVersion.Version) -}}
{{- fail (printf (print
  "%s (%s) is a Kubernetes sidecar, an init container with restartPolicy Always, which needs "
  "Kubernetes >= 1.29; this cluster runs %s: remove it, or run its work in initContainers (once, "
  "before the broker)")
  $where $name $.Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
minicluster.validateGracePeriod: the kubelet kills a pod terminationGracePeriodSeconds (30 by
default) after SIGTERM. The lead's job clean-up may take flux.cleanupTimeout (a Flux FSD), and the
brokers then unload Flux's modules and exit (0.2-0.5 s measured; 10 s leaves room). With
cleanupTimeout none there is no bound of Flux's own: the grace period is the limit.
*/}}
{{- define "minicluster.validateGracePeriod" -}}
{{- $cleanup := .Values.flux.cleanupTimeout | toString -}}
{{- $stop := 10 -}}
{{- if ne $cleanup "none" -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $cleanup -}}
{{- $scale := get (dict "ms" 0.001 "" 1 "s" 1 "m" 60 "h" 3600 "d" 86400) (trimPrefix $num $cleanup) -}}
{{- $seconds := mulf (float64 $num) $scale | ceil | int -}}
{{- /* flux.state: the lead's rc3 (the content dump) comes after the clean-up. */ -}}
{{- $dump := "" -}}
{{- if .Values.flux.state.enabled -}}
{{- $seconds = add $seconds (int .Values.flux.state.dumpTimeoutSeconds) -}}
{{- $dump = printf " + flux.state.dumpTimeoutSeconds=%d" (int .Values.flux.state.dumpTimeoutSeconds) -}}
{{- end -}}
{{- $set := not (kindIs "invalid" .Values.terminationGracePeriodSeconds) -}}
{{- $grace := ternary (int .Values.terminationGracePeriodSeconds) 30 $set -}}
{{- if lt $grace (add $seconds $stop) -}}
{{- $alternative := "" -}}
{{- $fixed := add $stop (ternary (int .Values.flux.state.dumpTimeoutSeconds) 0 .Values.flux.state.enabled) -}}
{{- if ge $grace $fixed -}}
{{- $alternative = printf ", or flux.cleanupTimeout to at most %ds" (sub $grace $fixed) -}}
{{- end -}}
{{- fail (printf (print
  "terminationGracePeriodSeconds=%d%s is too short for flux.cleanupTimeout=%s%s: the kubelet kills a "
  "broker pod that long after SIGTERM, and after the lead's job clean-up (up to flux.cleanupTimeout)%s "
  "the brokers need up to %d s more to unload Flux's modules and exit. Set "
  "terminationGracePeriodSeconds to at least %d%s")
  $grace (ternary "" " (Kubernetes' default: the value is not set)" $set) $cleanup $dump
  (ternary " and its content dump (up to flux.state.dumpTimeoutSeconds)" "" (ne $dump "")) $stop
  (add $seconds $stop) $alternative) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* minicluster.validateUpgrade compares with the live Job: only size may change on a running MiniCluster. */}}
{{- define "minicluster.validateUpgrade" -}}
{{- $name := include "minicluster.fullname" . -}}
{{- $live := include "minicluster.liveJob" . | fromJson -}}
{{- if $live -}}
{{- $recreate := printf (print
  "Kubernetes cannot change a running Job's pod template, so only size can change on a running "
  "MiniCluster (up to its maxSize). To apply this change, recreate it: helm uninstall %s -n %s, then "
  "helm install again with the new values")
  $name .Release.Namespace -}}
{{- $liveQueue := dig "metadata" "labels" "kueue.x-k8s.io/queue-name" "" $live -}}
{{- if ne $liveQueue .Values.queue.name -}}
{{- fail (printf (print
  "queue.name=%q differs from the running MiniCluster's queue %q, which is fixed at install (Kueue "
  "does not move a started Job to another queue). %s")
  .Values.queue.name $liveQueue $recreate) -}}
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
{{- $liveState := dig "metadata" "annotations" "minicluster.dev/state" "" $live -}}
{{- $newState := include "minicluster.stateSummary" . -}}
{{- if ne $liveState $newState -}}
{{- fail (printf (print
  "flux.state (%s) differs from the running MiniCluster's (%s): where the lead keeps Flux's state is "
  "fixed at install. %s")
  (default "off" $newState) (default "off" $liveState) $recreate) -}}
{{- end -}}
{{- $liveHash := dig "metadata" "annotations" "minicluster.dev/pod-template-hash" "" $live -}}
{{- if and $liveHash (ne $liveHash (include "minicluster.podTemplate" . | sha256sum)) -}}
{{- fail (printf "this upgrade changes the Job's pod template (command, tasks, env, resources, volumes, flux.* or another pod setting). %s" $recreate) -}}
{{- end -}}
{{- if not (include "minicluster.curveGiven" .) -}}
{{- $kind := ternary "ConfigMap" "Secret" (eq .Values.curve.storage "ConfigMap") -}}
{{- $cert := lookup "v1" $kind .Release.Namespace (include "minicluster.curveName" .) -}}
{{- if not (dig "data" "curve.cert" "" $cert) -}}
{{- fail (printf (print
  "the %s %s/%s with the CURVE certificate is missing or empty, but the MiniCluster %s is running with "
  "it: a new key would split the cluster, so none is made. Recreate the MiniCluster: helm uninstall %s "
  "-n %s, then helm install again")
  $kind .Release.Namespace (include "minicluster.curveName" .) $name $name .Release.Namespace) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* minicluster.validateCurve checks curve.cert: one source of the certificate, in the form flux keygen writes. The message never shows the certificate. */}}
{{- define "minicluster.validateCurve" -}}
{{- with .Values.curve.cert -}}
{{- if $.Values.curve.existingSecret -}}
{{- fail (printf "curve.cert and curve.existingSecret=%q are both set: the brokers use one certificate; keep one of them" $.Values.curve.existingSecret) -}}
{{- end -}}
{{- if eq $.Values.curve.storage "ConfigMap" -}}
{{- fail "curve.cert is stored in a Secret, but curve.storage=ConfigMap (which only says where the keygen Job puts a certificate it makes): set curve.storage=Secret, or drop curve.cert" -}}
{{- end -}}
{{- if not (and (regexMatch "(?m)^curve[ \\t]*$" .) (regexMatch "(?m)^[ \\t]+public-key = \"[^\"]{40}\"[ \\t]*$" .) (regexMatch "(?m)^[ \\t]+secret-key = \"[^\"]{40}\"[ \\t]*$" .)) -}}
{{- fail (print
  "curve.cert is not a CURVE certificate as `flux keygen` writes it: it needs a line `curve` followed "
  "by indented lines public-key = \"<40 characters>\" and secret-key = \"<40 characters>\" (the "
  "certificate is not shown here); give the whole file flux keygen wrote, e.g. --set-file "
  "curve.cert=curve.cert") -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* minicluster.validateServices checks services: container names that are DNS labels and unique in their pod, and a release name short enough for <release>-services. */}}
{{- define "minicluster.validateServices" -}}
{{- $seen := dict -}}
{{- range $i, $c := .Values.services -}}
{{- $name := $c.name | toString -}}
{{- if or (gt (len $name) 63) (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $name)) -}}
{{- fail (printf "services[%d].name=%q is not a DNS label (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters): rename the container" $i $name) -}}
{{- end -}}
{{- with index $seen $name -}}
{{- fail (printf "services[%d].name=%q is also the name of services[%s]: the containers of the services pod need names of their own; rename one" $i $name .) -}}
{{- end -}}
{{- $_ := set $seen $name (toString $i) -}}
{{- end -}}
{{- if and .Values.services (gt (len (include "minicluster.servicesName" .)) 63) -}}
{{- fail (printf "services: the services pod's name %q is longer than 63 characters (a DNS label): use a release name of at most 54 characters" (include "minicluster.servicesName" .)) -}}
{{- end -}}
{{- end -}}

{{/* minicluster.validateAutoscale checks autoscale.* and metrics.*; it renders nothing. */}}
{{- define "minicluster.validateAutoscale" -}}
{{- $as := .Values.autoscale -}}
{{- $max := include "minicluster.maxSize" . | int -}}
{{- if $as.enabled -}}
{{- if .Values.command -}}
{{- fail (printf (print
  "autoscale.enabled=true with command=%q: autoscaling sizes a persistent MiniCluster to the jobs "
  "submitted to it, and with a command the MiniCluster runs that one command on size brokers and ends. "
  "Unset command and submit the work (flux submit, flux batch, the REST API: a workflow's jobs too) to "
  "the persistent MiniCluster, or set autoscale.enabled=false")
  .Values.command) -}}
{{- end -}}
{{- if or (lt (int $as.minSize) 1) (gt (int $as.minSize) $max) -}}
{{- fail (printf "autoscale.minSize=%d: give 1 to maxSize (%d), the fewest brokers autoscaling keeps" (int $as.minSize) $max) -}}
{{- end -}}
{{- if lt (int $as.idleSeconds) 0 -}}
{{- fail (printf "autoscale.idleSeconds=%d: give 0 or more seconds" (int $as.idleSeconds)) -}}
{{- end -}}
{{- if and (eq .Values.flux.scheduler "fluxion") (eq .Values.flux.queuePolicy "fcfs") -}}
{{- fail (print
  "autoscale.enabled=true with flux.queuePolicy=fcfs: Fluxion's fcfs refuses a job that needs more "
  "brokers than are up, so no job could ever ask the MiniCluster to grow. Set flux.queuePolicy=easy "
  "(or hybrid, conservative: they queue such a job until the brokers join), or flux.scheduler=simple") -}}
{{- end -}}
{{- if .Values.queue.name -}}
{{- fail (printf (print
  "autoscale.enabled=true with queue.name=%q: Kueue admits a queued MiniCluster's brokers as a whole, "
  "and sizes asked from inside the MiniCluster would wait for Kueue's admission with nothing telling "
  "the waiting jobs why. Size a queued MiniCluster with helm upgrade --set size=N, or unset queue.name")
  .Values.queue.name) -}}
{{- end -}}
{{- end -}}
{{- $m := .Values.metrics -}}
{{- if $m.enabled -}}
{{- if .Values.command -}}
{{- fail (printf (print
  "metrics.enabled=true with command=%q: metrics describe a persistent MiniCluster's queue, and with a "
  "command the MiniCluster ends with it. Unset command, or set metrics.enabled=false")
  .Values.command) -}}
{{- end -}}
{{- range $name, $port := dict "flux.port" .Values.flux.port "flux.readinessPort" .Values.flux.readinessPort -}}
{{- if eq (int $m.port) (int $port) -}}
{{- fail (printf "metrics.port=%d is %s too: give the metrics another port (default 8052)" (int $m.port) $name) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.api.enabled (eq (int $m.port) (int .Values.api.port)) -}}
{{- fail (printf "metrics.port=%d is api.port too: give the metrics another port (default 8052)" (int $m.port)) -}}
{{- end -}}
{{- end -}}
{{- if $m.serviceMonitor.enabled -}}
{{- if not $m.enabled -}}
{{- fail "metrics.serviceMonitor.enabled=true needs metrics.enabled=true: the ServiceMonitor points Prometheus at the metrics Service" -}}
{{- end -}}
{{- if not (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor") -}}
{{- fail (print
  "metrics.serviceMonitor.enabled=true, but this cluster has no ServiceMonitor kind "
  "(monitoring.coreos.com/v1, the Prometheus Operator's CRD): install the Prometheus Operator first, "
  "or set metrics.serviceMonitor.enabled=false and point your Prometheus at the Service "
  "<release>-metrics") -}}
{{- end -}}
{{- end -}}
{{- end -}}
