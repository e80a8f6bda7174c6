{{/* minicluster.maxSize is the host list length: maxSize, or when 0 the live Job's, or max(size, 16) on install. */}}
{{- define "minicluster.maxSize" -}}
{{- $max := int .Values.maxSize -}}
{{- if eq $max 0 -}}
{{- $live := include "minicluster.liveJob" . | fromJson -}}
{{- $liveMax := dig "metadata" "annotations" "minicluster.dev/max-size" "" $live -}}
{{- if $liveMax -}}
{{- $max = int $liveMax -}}
{{- else -}}
{{- $max = max (int .Values.size) 16 -}}
{{- end -}}
{{- end -}}
{{- $max -}}
{{- end -}}

{{/* minicluster.jobSize is the Job's parallelism: size, or under autoscale the live Job's while
size is what the last install or upgrade gave (so an upgrade keeps what the autoscaler chose, and
--set size=N still sets a size). */}}
{{- define "minicluster.jobSize" -}}
{{- $size := int .Values.size -}}
{{- if .Values.autoscale.enabled -}}
{{- $live := include "minicluster.liveJob" . | fromJson -}}
{{- $given := dig "metadata" "annotations" "minicluster.dev/size" "" $live -}}
{{- if and $given (eq (int $given) $size) -}}
{{- $size = dig "spec" "parallelism" $size $live | int -}}
{{- end -}}
{{- end -}}
{{- $size -}}
{{- end -}}

{{/* minicluster.hosts is the RFC 29 hostlist of all maxSize brokers' short hostnames. */}}
{{- define "minicluster.hosts" -}}
{{- $max := include "minicluster.maxSize" . | int -}}
{{- if eq $max 1 -}}
{{- printf "%s-0" (include "minicluster.fullname" .) -}}
{{- else -}}
{{- printf "%s-[0-%d]" (include "minicluster.fullname" .) (sub $max 1) -}}
{{- end -}}
{{- end -}}

{{/* minicluster.domain is what follows a pod's hostname in its FQDN: <service>.<namespace>.svc.<clusterDomain>. */}}
{{- define "minicluster.domain" -}}
{{- printf "%s.%s.svc.%s" (include "minicluster.fullname" .) .Release.Namespace .Values.clusterDomain -}}
{{- end -}}

{{/* Fixed paths inside the pods; the broker's supervisor and broker.toml agree on them. */}}
{{- define "minicluster.curveCertPath" -}}/etc/curve/curve.cert{{- end -}}
{{- define "minicluster.resourcePath" -}}/minicluster/run/R{{- end -}}

{{/* minicluster.brokerToml is broker.toml (flux-config-bootstrap(5)); it changes with maxSize, never with size. */}}
{{- define "minicluster.brokerToml" -}}
{{- if .Values.flux.brokerConfig -}}
{{- .Values.flux.brokerConfig -}}
{{- else -}}
{{- $bootstrap := dict
  "curve_cert" (include "minicluster.curveCertPath" .)
  "default_port" (int .Values.flux.port)
  "default_bind" (printf "tcp://%s:%%p" .Values.flux.interface)
  "default_connect" (printf "tcp://%%h.%s:%%p" (include "minicluster.domain" .))
  "hosts" (list (dict "host" (include "minicluster.hosts" .))) -}}
{{- $config := dict
  "bootstrap" $bootstrap
  "resource" (dict "path" (include "minicluster.resourcePath" .) "noverify" true)
  "access" (dict "allow-guest-user" true "allow-root-owner" true)
  "ingest" (dict "validator" (dict "plugins" (ternary (list "jobspec" "/minicluster/scripts/validate-feasible.py") (list "jobspec" "/minicluster/scripts/validate-feasible.py" "/minicluster/scripts/validate-brokers-up.py") .Values.autoscale.enabled))) -}}
{{- /* The feasibility validator (files/validate-feasible.py: flux-core's feasibility.check, asked
once for each shape of request) refuses at submit a job that no MiniCluster of maxSize brokers
could run, with the scheduler's reason; the chart's own (files/validate-brokers-up.py) one that
needs more than the brokers up now, saying to grow the
MiniCluster first, so that every scheduler and queue policy treats it alike. Under autoscale such a
job waits instead: the MiniCluster grows for it. */ -}}
{{- if eq .Values.flux.scheduler "fluxion" -}}
{{- $_ := set $config "sched-fluxion-qmanager" (dict "queue-policy" .Values.flux.queuePolicy) -}}
{{- /* Fluxion's feasibility module judges against the whole R file (all maxSize brokers, as if
up): fed by the resource module it would count only the brokers up now. */ -}}
{{- $_ := set $config "sched-fluxion-feasibility" (dict "load-file" (include "minicluster.resourcePath" .)) -}}
{{- else -}}
{{- /* flux modprobe picks the scheduler with the highest priority (Fluxion's, where it is installed): name flux-core's. */ -}}
{{- $_ := set $config "modules" (dict "alternatives" (dict "sched" "sched-simple" "feasibility" "sched-simple")) -}}
{{- end -}}
{{- toToml $config -}}
{{- end -}}
{{- end -}}

{{/* minicluster.coresPerBroker is the cores each broker describes to Flux: flux.coresPerBroker, or
resources.limits.cpu rounded down (at least 1), or 0 (hwloc's view of the node). */}}
{{- define "minicluster.coresPerBroker" -}}
{{- $n := int .Values.flux.coresPerBroker -}}
{{- $cpu := dig "limits" "cpu" "" (.Values.resources | default dict) | toString -}}
{{- if and (eq $n 0) $cpu -}}
{{- if hasSuffix "m" $cpu -}}
{{- $n = div (trimSuffix "m" $cpu | int) 1000 -}}
{{- else -}}
{{- $n = floor ($cpu | float64) | int -}}
{{- end -}}
{{- $n = max $n 1 -}}
{{- end -}}
{{- $n -}}
{{- end -}}

{{/* minicluster.gpusPerBroker is the GPUs each broker describes to Flux: flux.gpusPerBroker, or the
pod's nvidia.com/gpu or amd.com/gpu limit, or 0. */}}
{{- define "minicluster.gpusPerBroker" -}}
{{- $n := int .Values.flux.gpusPerBroker -}}
{{- if eq $n 0 -}}
{{- $limits := dig "limits" dict (.Values.resources | default dict) -}}
{{- range $device := list "nvidia.com/gpu" "amd.com/gpu" -}}
{{- if and (eq $n 0) (hasKey $limits $device) -}}
{{- $n = int (get $limits $device) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $n -}}
{{- end -}}

{{/* minicluster.parameters is the JSON annotation the post-renderer reads from the broker ConfigMap. */}}
{{- define "minicluster.parameters" -}}
{{- $name := include "minicluster.fullname" . -}}
{{- toJson (dict
  "job" $name "service" $name
  "maxSize" (include "minicluster.maxSize" . | int) "port" (int .Values.flux.port)
  "clusterDomain" .Values.clusterDomain "interface" .Values.flux.interface
  "curveCert" (include "minicluster.curveCertPath" .) "resourcePath" (include "minicluster.resourcePath" .)
  "custom" (not (empty .Values.flux.brokerConfig))) -}}
{{- end -}}

{{/* minicluster.ephemeral is "true" when the lead runs a command and the instance ends with it. */}}
{{- define "minicluster.ephemeral" -}}
{{- if .Values.command }}true{{ end -}}
{{- end -}}

