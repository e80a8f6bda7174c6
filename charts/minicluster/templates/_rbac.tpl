{{/*
minicluster.keyRules are RBAC rules on the release's key objects, by name; call with
(dict "root" . "verbs" LIST "existing" BOOL). With existing, a curve.existingSecret or the Secret of
curve.cert, an api.existingSecret and the API's TLS Secret are included (the brokers read them;
the keygen Job never touches them).
*/}}
{{- define "minicluster.keyRules" -}}
{{- $v := .root.Values -}}
{{- $secrets := list -}}
{{- $configMaps := list -}}
{{- if $v.curve.existingSecret -}}
{{- if .existing }}{{ $secrets = append $secrets $v.curve.existingSecret }}{{ end -}}
{{- else if $v.curve.cert -}}
{{- if .existing }}{{ $secrets = append $secrets (include "minicluster.curveName" .root) }}{{ end -}}
{{- else if eq $v.curve.storage "ConfigMap" -}}
{{- $configMaps = append $configMaps (include "minicluster.curveName" .root) -}}
{{- else -}}
{{- $secrets = append $secrets (include "minicluster.curveName" .root) -}}
{{- end -}}
{{- if $v.munge.enabled -}}
{{- $secrets = append $secrets (include "minicluster.mungeName" .root) -}}
{{- end -}}
{{- if include "minicluster.apiGenerated" .root -}}
{{- $secrets = append $secrets (include "minicluster.apiName" .root) -}}
{{- end -}}
{{- if and .existing $v.api.enabled -}}
{{- if and $v.api.requireAuth $v.api.existingSecret }}{{ $secrets = append $secrets $v.api.existingSecret }}{{ end -}}
{{- with $v.api.tls.secretName }}{{ $secrets = append $secrets . }}{{ end -}}
{{- end -}}
{{- with $configMaps }}
- apiGroups: [""]
  resources: [configmaps]
  resourceNames: {{ toJson . }}
  verbs: {{ toJson $.verbs }}
{{- end }}
{{- with $secrets }}
- apiGroups: [""]
  resources: [secrets]
  resourceNames: {{ toJson . }}
  verbs: {{ toJson $.verbs }}
{{- end }}
{{- end -}}
