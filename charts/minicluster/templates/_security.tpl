{{/* minicluster.restrictedPodSecurity is the pod security context of the chart's own programs (no shell, no root). */}}
{{- define "minicluster.restrictedPodSecurity" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* minicluster.restrictedContainerSecurity is the container security context of the chart's own programs. */}}
{{- define "minicluster.restrictedContainerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}

{{/* minicluster.containerSecurity is the security context of a container running Flux (the
broker's, fluxContainers): the user's, with no privilege escalation and the runtime's default
seccomp profile wherever it says nothing of them; call with (dict "root" . "sc" SECURITYCONTEXT).
A privileged container or one given SYS_ADMIN keeps escalation (Kubernetes refuses the two
together), and a seccomp profile of the pod's is left to apply. */}}
{{- define "minicluster.containerSecurity" -}}
{{- $sc := deepCopy (.sc | default dict) -}}
{{- $caps := dig "capabilities" "add" list $sc -}}
{{- if not (or (hasKey $sc "allowPrivilegeEscalation") $sc.privileged (has "SYS_ADMIN" $caps) (has "CAP_SYS_ADMIN" $caps)) -}}
{{- $_ := set $sc "allowPrivilegeEscalation" false -}}
{{- end -}}
{{- if not (or (hasKey $sc "seccompProfile") $sc.privileged (hasKey (.root.Values.podSecurityContext | default dict) "seccompProfile")) -}}
{{- $_ := set $sc "seccompProfile" (dict "type" "RuntimeDefault") -}}
{{- end -}}
{{- toYaml $sc -}}
{{- end -}}
