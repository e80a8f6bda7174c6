{{/*
minicluster.validateRestricted: with podSecurityStandard=restricted, every value that asks for
what the "restricted" Pod Security Standard forbids fails here, before anything is created,
naming the value and the fix. The chart does not read the namespace's labels: lookup of a
Namespace needs a cluster-wide right that a user with rights in one namespace lacks, and Helm
fails the render when lookup is forbidden. The chart's own containers (keys, keygen, helm
test) are restricted always.
*/}}
{{- define "minicluster.validateRestricted" -}}
{{- if eq (.Values.podSecurityStandard | default "") "restricted" -}}
{{- $why := "podSecurityStandard=restricted (the namespace enforces Pod Security \"restricted\")" -}}
{{- $fix := "install with -f values/restricted.yaml, or see docs/shared-clusters.md" -}}
{{- range $v := list "hostIPC" "hostPID" -}}
{{- if index $.Values $v -}}
{{- fail (printf "%s=true is forbidden under %s: set %s=false" $v $why $v) -}}
{{- end -}}
{{- end -}}
{{- $pod := .Values.podSecurityContext | default dict -}}
{{- $containers := list (dict "what" "securityContext (the flux and flux-view containers)" "sc" (.Values.securityContext | default dict)) -}}
{{- range $i, $c := .Values.initContainers -}}
{{- $containers = append $containers (dict "what" (printf "initContainers[%d].securityContext (container %s)" $i $c.name) "sc" ($c.securityContext | default dict)) -}}
{{- end -}}
{{- range $i, $c := .Values.sidecars -}}
{{- $containers = append $containers (dict "what" (printf "sidecars[%d].securityContext (container %s)" $i $c.name) "sc" ($c.securityContext | default dict)) -}}
{{- end -}}
{{- /* The view's container and a Flux container without a securityContext of their own run with the broker's (checked above). */ -}}
{{- with .Values.flux.view.securityContext -}}
{{- $containers = append $containers (dict "what" "flux.view.securityContext (the flux-view container)" "sc" .) -}}
{{- end -}}
{{- range $i, $c := .Values.fluxContainers -}}
{{- with $c.securityContext -}}
{{- $containers = append $containers (dict "what" (printf "fluxContainers[%d].securityContext (container %s)" $i $c.name) "sc" .) -}}
{{- end -}}
{{- end -}}
{{- range $i, $c := .Values.services -}}
{{- $containers = append $containers (dict "what" (printf "services[%d].securityContext (container %s)" $i $c.name) "sc" ($c.securityContext | default dict)) -}}
{{- end -}}
{{- range $containers -}}
{{- $sc := .sc -}}
{{- $nonRoot := ternary $sc.runAsNonRoot $pod.runAsNonRoot (hasKey $sc "runAsNonRoot") -}}
{{- if not $nonRoot -}}
{{- fail (printf "%s: runAsNonRoot must be true (here or in podSecurityContext) under %s; %s" .what $why $fix) -}}
{{- end -}}
{{- $user := ternary $sc.runAsUser $pod.runAsUser (hasKey $sc "runAsUser") -}}
{{- if and (not (kindIs "invalid" $user)) (eq (int $user) 0) -}}
{{- fail (printf "%s: runAsUser 0 (root) is forbidden under %s; give a non-zero uid such as 1000" .what $why) -}}
{{- end -}}
{{- if $sc.privileged -}}
{{- fail (printf "%s: privileged=true is forbidden under %s; remove it" .what $why) -}}
{{- end -}}
{{- if or (not (hasKey $sc "allowPrivilegeEscalation")) $sc.allowPrivilegeEscalation -}}
{{- fail (printf "%s: allowPrivilegeEscalation must be false under %s; %s" .what $why $fix) -}}
{{- end -}}
{{- $caps := $sc.capabilities | default dict -}}
{{- if not (has "ALL" ($caps.drop | default list)) -}}
{{- fail (printf "%s: capabilities.drop must list ALL under %s; %s" .what $why $fix) -}}
{{- end -}}
{{- range ($caps.add | default list) -}}
{{- if ne . "NET_BIND_SERVICE" -}}
{{- fail (printf "%s: capabilities.add %s is forbidden under %s (only NET_BIND_SERVICE may be added); remove it" $.what . $why) -}}
{{- end -}}
{{- end -}}
{{- $seccomp := ternary $sc.seccompProfile $pod.seccompProfile (hasKey $sc "seccompProfile") | default dict -}}
{{- if not (has $seccomp.type (list "RuntimeDefault" "Localhost")) -}}
{{- fail (printf "%s: seccompProfile.type must be RuntimeDefault or Localhost (here or in podSecurityContext) under %s; %s" .what $why $fix) -}}
{{- end -}}
{{- end -}}
{{- $allowed := list "configMap" "csi" "downwardAPI" "emptyDir" "ephemeral" "image" "persistentVolumeClaim" "projected" "secret" -}}
{{- range $i, $v := .Values.volumes -}}
{{- range $k, $_ := $v -}}
{{- if and (ne $k "name") (not (has $k $allowed)) -}}
{{- fail (printf "volumes[%d] (%s) is a %s volume, which is forbidden under %s (allowed: %s); use a PersistentVolumeClaim instead" $i $v.name $k $why (join ", " $allowed)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
