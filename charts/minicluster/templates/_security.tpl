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
