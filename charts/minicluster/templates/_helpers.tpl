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

{{/* minicluster.curveName names the object that holds the CURVE certificate. */}}
{{- define "minicluster.curveName" -}}
{{- .Values.curve.existingSecret | default (printf "%s-curve" .Release.Name) -}}
{{- end -}}

{{/* minicluster.mungeName names the Secret that holds the munge key. */}}
{{- define "minicluster.mungeName" -}}
{{- printf "%s-munge" .Release.Name -}}
{{- end -}}

{{/* minicluster.keygen.fullname names the keygen hook's Job, ServiceAccount, Role and RoleBinding. */}}
{{- define "minicluster.keygen.fullname" -}}
{{- printf "%s-keygen" .Release.Name -}}
{{- end -}}

{{/* minicluster.keygen.enabled is "true" when the keygen hook has something to create. */}}
{{- define "minicluster.keygen.enabled" -}}
{{- if or (not .Values.curve.existingSecret) .Values.munge.enabled }}true{{ end -}}
{{- end -}}

{{/*
minicluster.keygen.hook is when the keygen hook runs. Helm 3 decides what to adopt before
pre-install hooks run and then fails to create an object a hook made ("already exists"), so
there the hook runs post-install and fills the data-less key objects Helm created (the brokers
wait for the key in ContainerCreating). Helm 4 applies server-side and adopts what a
pre-install hook made, so the key is there before any broker starts.
*/}}
{{- define "minicluster.keygen.hook" -}}
{{- if semverCompare ">=4.0.0-0" .Capabilities.HelmVersion.Version }}pre-install{{ else }}post-install{{ end -}}
{{- end -}}

{{/* minicluster.keygen.hookAnnotations makes an object part of the keygen hook; call with (dict "root" . "weight" W). */}}
{{- define "minicluster.keygen.hookAnnotations" -}}
helm.sh/hook: {{ include "minicluster.keygen.hook" .root }}
helm.sh/hook-weight: {{ .weight | quote }}
helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end -}}

{{/* minicluster.keygen.image is the keygen hook's image reference. */}}
{{- define "minicluster.keygen.image" -}}
{{- printf "%s:%s" .Values.keygen.image.repository (.Values.keygen.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* minicluster.liveJob is the running MiniCluster's Job as JSON ("{}" on install or with no cluster). */}}
{{- define "minicluster.liveJob" -}}
{{- lookup "batch/v1" "Job" .Release.Namespace (include "minicluster.fullname" .) | toJson -}}
{{- end -}}

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

{{/* Fixed paths inside the pods; the entrypoint and broker.toml agree on them. */}}
{{- define "minicluster.curveCertPath" -}}/etc/curve/curve.cert{{- end -}}
{{- define "minicluster.resourcePath" -}}/minicluster/run/R{{- end -}}

{{/* minicluster.brokerToml is broker.toml (flux-config-bootstrap(5)); it changes with maxSize, never with size. */}}
{{- define "minicluster.brokerToml" -}}
{{- if .Values.flux.brokerConfig -}}
{{- .Values.flux.brokerConfig -}}
{{- else -}}
[bootstrap]
curve_cert = {{ include "minicluster.curveCertPath" . | quote }}
default_port = {{ int .Values.flux.port }}
default_bind = {{ printf "tcp://%s:%%p" .Values.flux.interface | quote }}
default_connect = {{ printf "tcp://%%h.%s:%%p" (include "minicluster.domain" .) | quote }}
hosts = [{ host = {{ include "minicluster.hosts" . | quote }} }]

[resource]
path = {{ include "minicluster.resourcePath" . | quote }}
noverify = true

[access]
allow-guest-user = true
allow-root-owner = true
{{ end -}}
{{- end -}}

{{/* minicluster.parameters is the JSON annotation the post-renderer reads from the broker ConfigMap. */}}
{{- define "minicluster.parameters" -}}
{{- $name := include "minicluster.fullname" . -}}
{{- printf "{\"job\":%s,\"service\":%s,\"maxSize\":%d,\"port\":%d,\"clusterDomain\":%s,\"interface\":%s,\"curveCert\":%s,\"resourcePath\":%s,\"custom\":%t}"
  ($name | toJson) ($name | toJson) (include "minicluster.maxSize" . | int) (int .Values.flux.port)
  (.Values.clusterDomain | toJson) (.Values.flux.interface | toJson)
  (include "minicluster.curveCertPath" . | toJson) (include "minicluster.resourcePath" . | toJson)
  (not (empty .Values.flux.brokerConfig)) -}}
{{- end -}}

{{/* minicluster.ephemeral is "true" when the lead runs a command and the instance ends with it. */}}
{{- define "minicluster.ephemeral" -}}
{{- if and .Values.command (not .Values.interactive) }}true{{ end -}}
{{- end -}}

{{/* minicluster.defaultAffinity spreads brokers across nodes when the cluster has room (soft). */}}
{{- define "minicluster.defaultAffinity" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "minicluster.selectorLabels" . | nindent 12 }}
            app.kubernetes.io/component: broker
{{- end -}}

{{/* minicluster.podTemplate is the Job's pod template. Nothing in it may depend on size or on the
chart version: Kubernetes cannot change a Job's pod template, and a resize must still apply. */}}
{{- define "minicluster.podTemplate" -}}
metadata:
  labels:
    {{- include "minicluster.selectorLabels" . | nindent 4 }}
    app.kubernetes.io/component: broker
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .Values.podAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  subdomain: {{ include "minicluster.fullname" . }}
  restartPolicy: OnFailure
  enableServiceLinks: false
  {{- with .Values.serviceAccountName }}
  serviceAccountName: {{ . }}
  {{- end }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  affinity:
    {{- if .Values.affinity }}
    {{- toYaml .Values.affinity | nindent 4 }}
    {{- else }}
    {{- include "minicluster.defaultAffinity" . | nindent 4 }}
    {{- end }}
  {{- with .Values.podSecurityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if .Values.flux.view.enabled }}
  initContainers:
    - name: flux-view
      image: {{ .Values.flux.view.image }}
      imagePullPolicy: {{ .Values.flux.view.imagePullPolicy }}
      command:
        - /bin/sh
        - -c
        - |
          set -e
          cp -a /opt/view {{ .Values.flux.view.mountPath }}/view
          if [ -d /opt/software ]; then cp -a /opt/software {{ .Values.flux.view.mountPath }}/software; fi
      terminationMessagePolicy: FallbackToLogsOnError
      {{- with .Values.securityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      volumeMounts:
        - name: flux-view
          mountPath: {{ .Values.flux.view.mountPath }}
  {{- end }}
  containers:
    - name: flux
      image: {{ .Values.image }}
      imagePullPolicy: {{ .Values.imagePullPolicy }}
      command: ["/bin/sh", "/minicluster/scripts/entrypoint.sh"]
      {{- with .Values.workingDir }}
      workingDir: {{ . }}
      {{- end }}
      env:
        - name: MINICLUSTER_IMAGE
          value: {{ .Values.image | quote }}
        - name: MINICLUSTER_COMMAND
          value: {{ .Values.command | quote }}
        - name: MINICLUSTER_TASKS
          value: {{ int .Values.tasks | quote }}
        - name: MINICLUSTER_INTERACTIVE
          value: {{ ternary "true" "false" (not (include "minicluster.ephemeral" .)) | quote }}
        - name: MINICLUSTER_LOG_LEVEL
          value: {{ int .Values.flux.logLevel | quote }}
        - name: MINICLUSTER_CONNECT_TIMEOUT
          value: {{ .Values.flux.connectTimeout | quote }}
        - name: MINICLUSTER_TOPOLOGY
          value: {{ .Values.flux.topology | quote }}
        - name: MINICLUSTER_BROKER_OPTIONS
          value: {{ join " " .Values.flux.brokerOptions | quote }}
        - name: MINICLUSTER_FLUX_VIEW
          value: {{ ternary (printf "%s/view" .Values.flux.view.mountPath) "" .Values.flux.view.enabled | quote }}
        {{- with .Values.env }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      ports:
        - name: broker
          containerPort: {{ int .Values.flux.port }}
          protocol: TCP
      {{- with .Values.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.securityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      terminationMessagePolicy: FallbackToLogsOnError
      volumeMounts:
        - name: scripts
          mountPath: /minicluster/scripts
          readOnly: true
        - name: broker-config
          mountPath: /minicluster/config
          readOnly: true
        - name: curve
          mountPath: /minicluster/curve
          readOnly: true
        - name: curve-installed
          mountPath: /etc/curve
        - name: run
          mountPath: /minicluster/run
        {{- if .Values.flux.view.enabled }}
        - name: flux-view
          mountPath: {{ .Values.flux.view.mountPath }}
        {{- end }}
        {{- if .Values.munge.enabled }}
        - name: munge
          mountPath: /etc/munge
          readOnly: true
        {{- end }}
        {{- with .Values.volumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
  volumes:
    - name: scripts
      configMap:
        name: {{ include "minicluster.entrypointName" . }}
    - name: broker-config
      configMap:
        name: {{ include "minicluster.brokerConfigName" . }}
    - name: curve
      {{- if eq .Values.curve.storage "ConfigMap" }}
      configMap:
        name: {{ include "minicluster.curveName" . }}
        items:
          - key: curve.cert
            path: curve.cert
            mode: 0400
      {{- else }}
      secret:
        secretName: {{ include "minicluster.curveName" . }}
        items:
          - key: curve.cert
            path: curve.cert
            mode: 0400
      {{- end }}
    - name: curve-installed
      emptyDir:
        medium: Memory
    - name: run
      emptyDir: {}
    {{- if .Values.flux.view.enabled }}
    - name: flux-view
      emptyDir: {}
    {{- end }}
    {{- if .Values.munge.enabled }}
    - name: munge
      secret:
        secretName: {{ include "minicluster.mungeName" . }}
        items:
          - key: munge.key
            path: munge.key
            mode: 0400
    {{- end }}
    {{- with .Values.volumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/* minicluster.validate fails with a message that names the value and the fix; it renders nothing. */}}
{{- define "minicluster.validate" -}}
{{- $name := include "minicluster.fullname" . -}}
{{- $size := int .Values.size -}}
{{- $max := include "minicluster.maxSize" . | int -}}
{{- if lt $size 1 -}}
{{- fail (printf "size=%d: a MiniCluster needs at least 1 broker; set size to 1 or more" $size) -}}
{{- end -}}
{{- if gt $size $max -}}
{{- fail (printf "size=%d is larger than maxSize=%d, the number of hosts broker.toml lists; set maxSize to %d or more (on a running MiniCluster maxSize is fixed at install: uninstall and install again to grow past it)" $size $max $size) -}}
{{- end -}}
{{- if not (regexMatch "^[a-z]([-a-z0-9]*[a-z0-9])?$" $name) -}}
{{- fail (printf "release name %q cannot name the Service and the pods' hostnames: it must be a DNS label (lower-case letters, digits and '-', starting with a letter); install with another name" $name) -}}
{{- end -}}
{{- $lastHost := printf "%s-%d" $name (sub $max 1) -}}
{{- if gt (len $lastHost) 63 -}}
{{- fail (printf "hostname %q (release name %q, maxSize=%d) is %d characters; a hostname may have at most 63: use a release name of at most %d characters" $lastHost $name $max (len $lastHost) (sub 62 (len (toString (sub $max 1))))) -}}
{{- end -}}
{{- $port := int .Values.flux.port -}}
{{- if or (lt $port 1) (gt $port 65535) -}}
{{- fail (printf "flux.port=%d is not a TCP port; use 1-65535 (8050 by convention)" $port) -}}
{{- end -}}
{{- if and .Values.interactive .Values.command -}}
{{- fail "interactive=true and command are both set: interactive keeps the instance up with no command; unset one of them" -}}
{{- end -}}
{{- if and (gt (int .Values.tasks) 0) (not .Values.command) -}}
{{- fail (printf "tasks=%d needs a command to run; set command or set tasks to 0" (int .Values.tasks)) -}}
{{- end -}}
{{- include "minicluster.validateUpgrade" . -}}
{{- end -}}

{{/* minicluster.validateUpgrade compares with the live Job: only size may change on a running MiniCluster. */}}
{{- define "minicluster.validateUpgrade" -}}
{{- $name := include "minicluster.fullname" . -}}
{{- $live := include "minicluster.liveJob" . | fromJson -}}
{{- if $live -}}
{{- $recreate := printf "Kubernetes cannot change a running Job's pod template, so only size can change on a running MiniCluster (up to its maxSize). To apply this change, recreate it: helm uninstall %s -n %s, then helm install again with the new values" $name .Release.Namespace -}}
{{- $liveMax := dig "metadata" "annotations" "minicluster.dev/max-size" "" $live -}}
{{- if and $liveMax (ne (int .Values.maxSize) 0) (ne (int .Values.maxSize) (int $liveMax)) -}}
{{- fail (printf "maxSize=%d differs from the running MiniCluster's maxSize=%s, which is fixed at install (it is the host list every broker has). %s" (int .Values.maxSize) $liveMax $recreate) -}}
{{- end -}}
{{- range (dig "spec" "template" "spec" "containers" list $live) -}}
{{- if and (eq .name "flux") (ne .image $.Values.image) -}}
{{- fail (printf "image=%q differs from the running MiniCluster's image %q. %s" $.Values.image .image $recreate) -}}
{{- end -}}
{{- end -}}
{{- $liveHash := dig "metadata" "annotations" "minicluster.dev/pod-template-hash" "" $live -}}
{{- if and $liveHash (ne $liveHash (include "minicluster.podTemplate" . | sha256sum)) -}}
{{- fail (printf "this upgrade changes the Job's pod template (command, tasks, interactive, env, resources, volumes, flux.* or another pod setting). %s" $recreate) -}}
{{- end -}}
{{- if not .Values.curve.existingSecret -}}
{{- $kind := ternary "ConfigMap" "Secret" (eq .Values.curve.storage "ConfigMap") -}}
{{- $cert := lookup "v1" $kind .Release.Namespace (include "minicluster.curveName" .) -}}
{{- if not (dig "data" "curve.cert" "" $cert) -}}
{{- fail (printf "the %s %s/%s with the CURVE certificate is missing or empty, but the MiniCluster %s is running with it: a new key would split the cluster, so none is made. Recreate the MiniCluster: helm uninstall %s -n %s, then helm install again" $kind .Release.Namespace (include "minicluster.curveName" .) $name $name .Release.Namespace) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
