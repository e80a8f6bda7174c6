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
