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
