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
