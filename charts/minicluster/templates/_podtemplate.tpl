{{/* minicluster.defaultSpread spreads brokers across nodes when the cluster has room (soft: with more
brokers than nodes they share them). A topology spread, not a preferred pod anti-affinity: for each
pod that has one, the scheduler's InterPodAffinity looks at every pod in the cluster (and every
later pod looks at the brokers), which at 10,000 brokers cost it more than all else; a spread
constraint replaces the default spreading a Service's pods get anyway, at the same cost. */}}
{{- define "minicluster.defaultSpread" -}}
- maxSkew: 1
  topologyKey: kubernetes.io/hostname
  whenUnsatisfiable: ScheduleAnyway
  labelSelector:
    matchLabels:
      {{- include "minicluster.selectorLabels" . | nindent 6 }}
      app.kubernetes.io/component: broker
{{- end -}}

{{/* minicluster.userSpread is topologySpreadConstraints, each without a labelSelector given the brokers' selector. */}}
{{- define "minicluster.userSpread" -}}
{{- $brokers := dict "matchLabels" (merge (include "minicluster.selectorLabels" . | fromYaml) (dict "app.kubernetes.io/component" "broker")) -}}
{{- $out := list -}}
{{- range .Values.topologySpreadConstraints -}}
{{- if hasKey . "labelSelector" -}}
{{- $out = append $out . -}}
{{- else -}}
{{- $out = append $out (merge (dict "labelSelector" $brokers) .) -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* minicluster.sidecars is the sidecars value as Kubernetes sidecars: init containers with restartPolicy Always. */}}
{{- define "minicluster.sidecars" -}}
{{- $out := list -}}
{{- range .Values.sidecars -}}
{{- $out = append $out (merge (dict "restartPolicy" "Always") .) -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* minicluster.jobSuccessPolicy is "true" for an ephemeral MiniCluster where the cluster has Job successPolicy (1.31 beta, 1.33 GA). */}}
{{- define "minicluster.jobSuccessPolicy" -}}
{{- if and (include "minicluster.ephemeral" .) (semverCompare ">=1.31-0" .Capabilities.KubeVersion.Version) }}true{{ end -}}
{{- end -}}

{{/* Exit code of a broker that cannot start (a config or certificate problem): the Job fails at once with it. */}}
{{- define "minicluster.exitCannotStart" -}}78{{- end -}}

{{/* Exit code of the keys container of a broker pod deleted with its namespace: the Job fails with it, which lets the namespace go. */}}
{{- define "minicluster.exitNamespaceDeleted" -}}79{{- end -}}

{{/* minicluster.podTemplate is the Job's pod template. Nothing in it may depend on size or on the
chart version: Kubernetes cannot change a Job's pod template, and a resize must still apply. */}}
{{- define "minicluster.podTemplate" -}}
{{- $view := .Values.flux.view -}}
{{- /* Where Flux comes from: a copy of the view, the view image itself, or neither (Flux in the image). */ -}}
{{- $viewMode := include "minicluster.viewMode" . -}}
{{- $viewCopy := and $view.enabled (eq $viewMode "copy") -}}
{{- $viewImage := and $view.enabled (eq $viewMode "image") -}}
metadata:
  labels:
    {{- include "minicluster.selectorLabels" . | nindent 4 }}
    app.kubernetes.io/component: broker
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    # kubectl logs and exec pick the broker's container.
    kubectl.kubernetes.io/default-container: flux
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  subdomain: {{ include "minicluster.fullname" . }}
  # A broker that fails is a failed pod the Job counts (podFailurePolicy needs Never); the
  # retries that can help happen inside the broker's supervisor.
  restartPolicy: Never
  enableServiceLinks: false
  serviceAccountName: {{ include "minicluster.broker.serviceAccountName" . }}
  # No token in the broker's containers, whatever the account: every job could read it, and with
  # it the release's keys. The keys container has its own (the volume api-token).
  automountServiceAccountToken: {{ eq (toString .Values.automountServiceAccountToken) "true" }}
  {{- if .Values.shareProcessNamespace }}
  shareProcessNamespace: true
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
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- include "minicluster.userSpread" . | nindent 4 }}
  {{- else if not .Values.affinity }}
  topologySpreadConstraints:
    {{- include "minicluster.defaultSpread" . | nindent 4 }}
  {{- end }}
  {{- with .Values.podSecurityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.schedulerName }}
  schedulerName: {{ . }}
  {{- end }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  {{- with .Values.runtimeClassName }}
  runtimeClassName: {{ . }}
  {{- end }}
  {{- with .Values.dnsPolicy }}
  dnsPolicy: {{ . }}
  {{- end }}
  {{- with .Values.dnsConfig }}
  dnsConfig:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if .Values.hostIPC }}
  hostIPC: true
  {{- end }}
  {{- if .Values.hostPID }}
  hostPID: true
  {{- end }}
  {{- if not (kindIs "invalid" .Values.terminationGracePeriodSeconds) }}
  terminationGracePeriodSeconds: {{ int .Values.terminationGracePeriodSeconds }}
  {{- end }}
  {{- /* The chart has no init containers of its own (see containers below), so the user's run
  before everything of the chart's: their order is theirs, then the sidecars, which Kubernetes
  starts before the containers and stops after the broker's container ends. */}}
  {{- $init := concat (.Values.initContainers | default list) (include "minicluster.sidecars" . | fromYamlArray) }}
  {{- with $init }}
  initContainers:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  # The broker's container first (kustomizations address it as containers/0), then its helpers,
  # which run beside it, not before it as init containers: the kubelet would start the broker
  # only at its next 1 s relist after they end. The supervisor waits for each helper's .ready in
  # the volume they share; each helper ends when the broker's container ends (a FIFO the
  # supervisor holds open), so the pod completes with it.
  containers:
    {{- include "minicluster.brokerContainer" . }}
    {{- include "minicluster.viewContainer" . }}
    {{- include "minicluster.keysContainer" . }}
    {{- range .Values.fluxContainers }}
    {{- include "minicluster.fluxContainer" (dict "root" $ "c" . "viewCopy" $viewCopy "viewImage" $viewImage) | nindent 4 }}
    {{- end }}
  {{- include "minicluster.podVolumes" . }}
{{- end -}}

{{/* minicluster.operatorEnv is the broker container's environment for the settings of the Flux
Operator's MiniCluster: logging, commands and batch (the supervisor, minicluster-broker, reads them). */}}
{{- define "minicluster.operatorEnv" -}}
{{- $l := .Values.logging -}}
{{- $c := .Values.commands -}}
{{- range $name, $env := dict "quiet" "MINICLUSTER_QUIET" "strict" "MINICLUSTER_STRICT" "debug" "MINICLUSTER_DEBUG" "zeromq" "MINICLUSTER_ZEROMQ" "timed" "MINICLUSTER_TIMED" }}
{{- if index $l $name }}
- name: {{ $env }}
  value: "true"
{{- end }}
{{- end }}
{{- range $name, $env := dict "init" "MINICLUSTER_CMD_INIT" "pre" "MINICLUSTER_CMD_PRE" "brokerPre" "MINICLUSTER_CMD_BROKER_PRE" "workerPre" "MINICLUSTER_CMD_WORKER_PRE" "post" "MINICLUSTER_CMD_POST" "prefix" "MINICLUSTER_COMMAND_PREFIX" }}
{{- with index $c $name }}
- name: {{ $env }}
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- if .Values.flux.completeWorkers }}
- name: MINICLUSTER_COMPLETE_WORKERS
  value: "true"
{{- end }}
{{- if .Values.batch.enabled }}
- name: MINICLUSTER_BATCH
  value: {{ ternary "raw" "batch" .Values.batch.raw | quote }}
- name: MINICLUSTER_BATCH_OUTPUT
  value: {{ .Values.batch.outputDir | quote }}
{{- end }}
{{- end -}}


{{/* minicluster.fluxContainer is one of fluxContainers: the user's container with the broker's Flux
(files/flux-container.sh); call with (dict "root" . "c" ITEM "viewCopy" BOOL "viewImage" BOOL). It
shares the run volume (the broker's socket), the scripts (env.sh, the flux wrapper) and the view,
read-only; never the keys. */}}
{{- define "minicluster.fluxContainer" -}}
{{- $v := .root.Values -}}
{{- $view := $v.flux.view -}}
{{- $c := .c -}}
- name: {{ $c.name }}
  image: {{ $c.image }}
  imagePullPolicy: {{ $c.imagePullPolicy | default $v.imagePullPolicy }}
  command: ["/bin/sh", "/minicluster/scripts/flux-container.sh"]
  {{- with $c.workingDir }}
  workingDir: {{ . }}
  {{- end }}
  env:
    - name: MINICLUSTER_CONTAINER_COMMAND
      value: {{ $c.command | quote }}
    - name: MINICLUSTER_WAIT_SOCKET
      value: {{ ternary "false" "true" (eq (toString $c.waitSocket) "false") | quote }}
    - name: MINICLUSTER_HELPERS
      value: {{ ternary $view.mountPath "" .viewCopy | quote }}
    - name: MINICLUSTER_FLUX_VIEW
      value: {{ ternary (printf "%s/view" $view.mountPath) "" .viewCopy | quote }}
    - name: MINICLUSTER_FLUX_VIEW_ROOT
      value: {{ ternary $view.mountPath "" .viewImage | quote }}
    - name: FLUX_URI
      value: local:///minicluster/run/flux/local
    {{- with $c.env }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with $c.ports }}
  ports:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $c.lifecycle }}
  lifecycle:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- include "minicluster.containerSecurity" (dict "root" .root "sc" ($c.securityContext | default $v.securityContext)) | nindent 4 }}
  terminationMessagePolicy: FallbackToLogsOnError
  volumeMounts:
    - name: scripts
      mountPath: /minicluster/scripts
      readOnly: true
    - name: scripts
      mountPath: /usr/local/sbin/flux
      subPath: flux
      readOnly: true
    - name: run
      mountPath: /minicluster/run
    {{- if $view.enabled }}
    - name: flux-view
      mountPath: {{ $view.mountPath }}
      readOnly: true
    {{- if $view.softwarePath }}
    - name: flux-view
      mountPath: {{ $view.softwarePath }}
      subPath: {{ ternary (trimPrefix "/" $view.softwarePath) "software" .viewImage }}
      readOnly: true
    {{- end }}
    {{- end }}
    {{- with $c.volumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}
