{{/* minicluster.name is the chart name, used in labels. */}}
{{- define "minicluster.name" -}}
{{- .Chart.Name -}}
{{- end -}}

{{/* minicluster.fullname names the Job and the Service: pod i is <fullname>-<i>. */}}
{{- define "minicluster.fullname" -}}
{{- .Release.Name -}}
{{- end -}}

{{/* minicluster.chart is the helm.sh/chart label value. */}}
{{- define "minicluster.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* minicluster.selectorLabels are the stable labels selectors use; they never change on upgrade. */}}
{{- define "minicluster.selectorLabels" -}}
app.kubernetes.io/name: {{ include "minicluster.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* minicluster.labels is the full label set of every object (not of the Job's pod template). */}}
{{- define "minicluster.labels" -}}
helm.sh/chart: {{ include "minicluster.chart" . }}
{{ include "minicluster.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* minicluster.brokerConfigName names the ConfigMap with broker.toml, hosts and size. */}}
{{- define "minicluster.brokerConfigName" -}}
{{- printf "%s-broker" .Release.Name -}}
{{- end -}}

{{/* minicluster.entrypointName names the ConfigMap with the pods' entrypoint script. */}}
{{- define "minicluster.entrypointName" -}}
{{- printf "%s-entrypoint" .Release.Name -}}
{{- end -}}

{{/* minicluster.curveGiven is "true" when the CURVE certificate is the user's (curve.existingSecret or curve.cert): the keygen Job makes none. */}}
{{- define "minicluster.curveGiven" -}}
{{- if or .Values.curve.existingSecret .Values.curve.cert }}true{{ end -}}
{{- end -}}

{{/* minicluster.curveName names the object that holds the CURVE certificate. */}}
{{- define "minicluster.curveName" -}}
{{- .Values.curve.existingSecret | default (printf "%s-curve" .Release.Name) -}}
{{- end -}}

{{/* minicluster.servicesName names the services Deployment, its pod's hostname and its Service. */}}
{{- define "minicluster.servicesName" -}}
{{- printf "%s-services" .Release.Name -}}
{{- end -}}

{{/* minicluster.mungeName names the Secret that holds the munge key. */}}
{{- define "minicluster.mungeName" -}}
{{- printf "%s-munge" .Release.Name -}}
{{- end -}}

{{/* minicluster.keygen.fullname names the keygen Job, ServiceAccount, Role and RoleBinding. */}}
{{- define "minicluster.keygen.fullname" -}}
{{- printf "%s-keygen" .Release.Name -}}
{{- end -}}

{{/* minicluster.keygen.enabled is "true" when the keygen Job has something to fill. */}}
{{- define "minicluster.keygen.enabled" -}}
{{- if or (not (include "minicluster.curveGiven" .)) .Values.munge.enabled (include "minicluster.apiGenerated" .) }}true{{ end -}}
{{- end -}}

{{/*
minicluster.image is the reference of one of the chart's own images (flux-keygen, the helm test
image); call with (dict "root" . "repository" REPO "tag" TAG). REPO may carry its own :tag or
@digest, then TAG is "". With imageRegistry set, everything before REPO's last path element (its
registry host and path) is replaced by imageRegistry, the way `make push` names what it pushes:
ghcr.io/minicluster/flux-keygen -> IMAGEREGISTRY/flux-keygen, busybox:1.37 ->
IMAGEREGISTRY/busybox:1.37. The application and view images never pass through here.
*/}}
{{- define "minicluster.image" -}}
{{- $ref := .repository -}}
{{- with .root.Values.imageRegistry -}}
{{- $ref = printf "%s/%s" (trimSuffix "/" .) (base $ref) -}}
{{- end -}}
{{- if .tag -}}
{{- printf "%s:%s" $ref .tag -}}
{{- else -}}
{{- $ref -}}
{{- end -}}
{{- end -}}

{{/* minicluster.broker.fullname names the broker pods' Role and RoleBinding. */}}
{{- define "minicluster.broker.fullname" -}}
{{- printf "%s-broker" .Release.Name -}}
{{- end -}}

{{/* minicluster.broker.serviceAccountName is the broker pods' ServiceAccount: serviceAccountName, or the chart's. */}}
{{- define "minicluster.broker.serviceAccountName" -}}
{{- .Values.serviceAccountName | default (include "minicluster.broker.fullname" .) -}}
{{- end -}}

{{/* minicluster.stateClaimName names the PersistentVolumeClaim that keeps Flux's state (flux.state): the user's, or <release>-state. */}}
{{- define "minicluster.stateClaimName" -}}
{{- .Values.flux.state.existingClaim | default (printf "%s-state" (include "minicluster.fullname" .)) -}}
{{- end -}}

{{/* minicluster.apiName names the Service of the Flux RESTful API (api.enabled) and its generated Secret. */}}
{{- define "minicluster.apiName" -}}
{{- printf "%s-api" .Release.Name -}}
{{- end -}}

{{/* minicluster.apiGenerated is "true" when the keygen Job makes the API's credentials (api.enabled, api.requireAuth, no api.existingSecret). */}}
{{- define "minicluster.apiGenerated" -}}
{{- if and .Values.api.enabled .Values.api.requireAuth (not .Values.api.existingSecret) }}true{{ end -}}
{{- end -}}

{{/* minicluster.apiSecretName names the Secret of the API's credentials: the user's own, or the generated one. */}}
{{- define "minicluster.apiSecretName" -}}
{{- .Values.api.existingSecret | default (include "minicluster.apiName" .) -}}
{{- end -}}
