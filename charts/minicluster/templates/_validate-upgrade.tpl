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
