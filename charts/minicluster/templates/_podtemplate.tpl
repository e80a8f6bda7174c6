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
  # retries that can help happen inside the entrypoint.
  restartPolicy: Never
  enableServiceLinks: false
  serviceAccountName: {{ include "minicluster.broker.serviceAccountName" . }}
  {{- if not (kindIs "invalid" .Values.automountServiceAccountToken) }}
  automountServiceAccountToken: {{ .Values.automountServiceAccountToken }}
  {{- else if not .Values.serviceAccountName }}
  automountServiceAccountToken: false
  {{- end }}
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
  # only at its next 1 s relist after they end. The entrypoint waits for each helper's .ready in
  # the volume they share; each helper ends when the broker's container ends (a FIFO the
  # entrypoint holds open), so the pod completes with it.
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
        # Brokers start again when the instance ends, unless the Job needs every pod to succeed
        # (ephemeral on a cluster without successPolicy).
        - name: MINICLUSTER_REJOIN
          value: {{ ternary "true" "false" (or (not (include "minicluster.ephemeral" .)) (eq (include "minicluster.jobSuccessPolicy" .) "true")) | quote }}
        - name: MINICLUSTER_EXIT_CANNOT_START
          value: {{ include "minicluster.exitCannotStart" . | quote }}
        - name: MINICLUSTER_LOG_LEVEL
          value: {{ int .Values.flux.logLevel | quote }}
        - name: MINICLUSTER_CONNECT_TIMEOUT
          value: {{ .Values.flux.connectTimeout | quote }}
        - name: MINICLUSTER_CLEANUP_TIMEOUT
          value: {{ .Values.flux.cleanupTimeout | quote }}
        - name: MINICLUSTER_EPHEMERAL_EXIT
          value: {{ .Values.flux.ephemeralExit | quote }}
        - name: MINICLUSTER_TOPOLOGY
          value: {{ .Values.flux.topology | quote }}
        - name: MINICLUSTER_SCHEDULER
          value: {{ .Values.flux.scheduler | quote }}
        # What each broker describes to Flux (0: what hwloc sees on the node).
        - name: MINICLUSTER_CORES
          value: {{ include "minicluster.coresPerBroker" . | quote }}
        - name: MINICLUSTER_GPUS
          value: {{ include "minicluster.gpusPerBroker" . | quote }}
        # OpenMPI's TCP (between pods) on the brokers' interface: it would otherwise try every
        # interface it finds, loopback and bridges included.
        - name: OMPI_MCA_btl_tcp_if_include
          value: {{ .Values.flux.interface | quote }}
        - name: OMPI_MCA_oob_tcp_if_include
          value: {{ .Values.flux.interface | quote }}
        # One option per line: options may contain spaces.
        # The helpers' shared directories: the entrypoint waits for each one's .ready.
        - name: MINICLUSTER_HELPERS
          value: {{ ternary (printf "/minicluster/keys %s" $view.mountPath) "/minicluster/keys" $viewCopy | quote }}
        {{- with .Values.flux.wrap }}
        # flux.wrap: flux start's --wrap, comma-separated words before flux-broker.
        - name: MINICLUSTER_WRAP
          value: {{ . | quote }}
        {{- end }}
        - name: MINICLUSTER_BROKER_OPTIONS
          value: {{ join "\n" .Values.flux.brokerOptions | quote }}
        # Copy: the view tree's copy. Image: the view image's root, where env.sh follows /opt/view.
        - name: MINICLUSTER_FLUX_VIEW
          value: {{ ternary (printf "%s/view" $view.mountPath) "" $viewCopy | quote }}
        - name: MINICLUSTER_FLUX_VIEW_ROOT
          value: {{ ternary $view.mountPath "" $viewImage | quote }}
        - name: MINICLUSTER_FLUX_VIEW_IMAGE
          value: {{ ternary $view.image "" $view.enabled | quote }}
        # Fixed paths the entrypoint installs the certificate and writes R to (broker.toml names them).
        - name: MINICLUSTER_CURVE_CERT
          value: {{ include "minicluster.curveCertPath" . | quote }}
        - name: MINICLUSTER_RESOURCE_PATH
          value: {{ include "minicluster.resourcePath" . | quote }}
        {{- if .Values.flux.state.enabled }}
        # flux.state: the archive the lead restores at start and dumps to at stop, and how
        # long its rc3 (the dump) may take.
        - name: MINICLUSTER_STATE
          value: /minicluster/state/flux-content.tgz
        - name: MINICLUSTER_STATE_DUMP_TIMEOUT
          value: {{ int .Values.flux.state.dumpTimeoutSeconds | quote }}
        {{- end }}
        {{- with include "minicluster.operatorEnv" . }}
        {{- . | nindent 8 }}
        {{- end }}
        {{- if .Values.api.enabled }}
        # api.enabled: the lead serves the Flux RESTful API on this port (entrypoint.sh).
        - name: MINICLUSTER_API_PORT
          value: {{ int .Values.api.port | quote }}
        {{- end }}
        # For kubectl exec: flux (and flux proxy $FLUX_URI) reach this pod's broker, whose
        # socket the entrypoint pins at the same path in every pod. PATH stays the image's: a
        # value here would replace it, not extend it.
        - name: FLUX_URI
          value: local:///minicluster/run/flux/local
        {{- with .Values.env }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      ports:
        - name: broker
          containerPort: {{ int .Values.flux.port }}
          protocol: TCP
        {{- if .Values.api.enabled }}
        - name: api
          containerPort: {{ int .Values.api.port }}
          protocol: TCP
        {{- end }}
      # Ready once Flux counts this broker online (the entrypoint's .online, served by the keys
      # container): an HTTP probe, which costs the node far less than an exec probe would.
      readinessProbe:
        httpGet:
          path: /readyz
          port: {{ int .Values.flux.readinessPort }}
        periodSeconds: 1
        timeoutSeconds: 2
        failureThreshold: 3
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
        - name: scripts
          mountPath: /minicluster/modprobe/rc1.d/minicluster.py
          subPath: modprobe-rc1.py
          readOnly: true
        # `flux` for kubectl exec (files/flux.sh): runs the view's Flux, or the image's, with
        # the broker's environment. /usr/local/sbin is on the PATH of nearly every image.
        - name: scripts
          mountPath: /usr/local/sbin/flux
          subPath: flux
          readOnly: true
        - name: broker-config
          mountPath: /minicluster/config
          readOnly: true
        # Writable: the entrypoint leaves .ended here for the helpers as it exits.
        - name: keys
          mountPath: /minicluster/keys
        - name: curve-installed
          mountPath: /etc/curve
        - name: run
          mountPath: /minicluster/run
        {{- if $view.enabled }}
        - name: flux-view
          mountPath: {{ $view.mountPath }}
          {{- if $viewImage }}
          readOnly: true
          {{- end }}
        {{- if $view.softwarePath }}
        - name: flux-view
          mountPath: {{ $view.softwarePath }}
          subPath: {{ ternary (trimPrefix "/" $view.softwarePath) "software" $viewImage }}
          {{- if $viewImage }}
          readOnly: true
          {{- end }}
        {{- end }}
        {{- end }}
        {{- if .Values.munge.enabled }}
        - name: munge-installed
          mountPath: /etc/munge
        {{- end }}
        {{- if .Values.sharedMemory }}
        - name: shm
          mountPath: /dev/shm
        {{- end }}
        {{- if .Values.flux.state.enabled }}
        - name: state
          mountPath: /minicluster/state
        {{- end }}
        {{- if and .Values.api.enabled .Values.api.requireAuth }}
        - name: api-credentials
          mountPath: /minicluster/api/credentials
          readOnly: true
        {{- end }}
        {{- if and .Values.api.enabled .Values.api.tls.secretName }}
        - name: api-tls
          mountPath: /minicluster/api/tls
          readOnly: true
        {{- end }}
        {{- with .Values.volumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    {{- if $viewCopy }}
    # The view image's Flux, as the Flux Operator copies it (files/view-copy.sh).
    - name: flux-view
      image: {{ $view.image }}
      imagePullPolicy: {{ $view.imagePullPolicy }}
      command:
        - /bin/sh
        - -c
        - |
          {{- include "minicluster.file" (dict "root" . "name" "view-copy.sh" "indent" 10) }}
      env:
        - name: MINICLUSTER_FLUX_VIEW_MOUNT
          value: {{ $view.mountPath | quote }}
        - name: MINICLUSTER_FLUX_VIEW_IMAGE
          value: {{ $view.image | quote }}
        - name: MINICLUSTER_FLUX_VIEW_SOFTWARE
          value: {{ $view.softwarePath | quote }}
      terminationMessagePolicy: FallbackToLogsOnError
      {{- with .Values.securityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      volumeMounts:
        - name: flux-view
          mountPath: {{ $view.mountPath }}
        # Only for the entrypoint's .ended.
        - name: keys
          mountPath: /minicluster/keys
          readOnly: true
    {{- end }}
    # The sidecar (flux-keygen sidecar): the keys the keygen Job writes while the pods start; a
    # worker's also waits until the Service lists its parent broker, so that its first DNS
    # lookup of it finds it.
    - name: keys
      image: {{ include "minicluster.image" (dict "root" . "repository" .Values.keygen.image.repository "tag" (.Values.keygen.image.tag | default .Chart.AppVersion)) }}
      imagePullPolicy: {{ .Values.keygen.image.pullPolicy }}
      args:
        - sidecar
        - --namespace=$(POD_NAMESPACE)
        - --out=/minicluster/keys
        {{- if include "minicluster.curveGiven" . }}
        - --curve-name={{ include "minicluster.curveName" . }}
        {{- else }}
        - --curve-name={{ include "minicluster.curveName" . }}
        - --storage={{ .Values.curve.storage }}
        {{- end }}
        {{- if .Values.munge.enabled }}
        - --munge-name={{ include "minicluster.mungeName" . }}
        {{- end }}
        - --readiness-addr=:{{ int .Values.flux.readinessPort }}
        {{- if .Values.api.enabled }}
        # The lead's keys container hands the API server to the broker's container.
        - --api-server=/minicluster/keys/minicluster-api
        {{- end }}
        - --wait-parent
        - --hosts-file=/minicluster/config/hosts
        - --topology={{ .Values.flux.topology }}
      env:
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
      securityContext:
        {{- include "minicluster.restrictedPodSecurity" . | nindent 8 }}
        {{- include "minicluster.restrictedContainerSecurity" . | nindent 8 }}
      terminationMessagePolicy: FallbackToLogsOnError
      volumeMounts:
        - name: keys
          mountPath: /minicluster/keys
        - name: broker-config
          mountPath: /minicluster/config
          readOnly: true
        - name: api-token
          mountPath: /var/run/secrets/kubernetes.io/serviceaccount
          readOnly: true
    {{- range .Values.fluxContainers }}
    {{- include "minicluster.fluxContainer" (dict "root" $ "c" . "viewCopy" $viewCopy "viewImage" $viewImage) | nindent 4 }}
    {{- end }}
  volumes:
    - name: scripts
      configMap:
        name: {{ include "minicluster.entrypointName" . }}
        defaultMode: 0555
    - name: broker-config
      configMap:
        name: {{ include "minicluster.brokerConfigName" . }}
    - name: keys
      emptyDir:
        medium: Memory
    - name: curve-installed
      emptyDir:
        medium: Memory
    - name: run
      emptyDir: {}
    # The keys container's API token, mounted into it alone.
    - name: api-token
      projected:
        sources:
          - serviceAccountToken:
              path: token
              expirationSeconds: 3600
          - configMap:
              name: kube-root-ca.crt
              items:
                - key: ca.crt
                  path: ca.crt
          - downwardAPI:
              items:
                - path: namespace
                  fieldRef:
                    fieldPath: metadata.namespace
    {{- if $viewImage }}
    # The view image itself, read-only: nothing is copied.
    - name: flux-view
      image:
        reference: {{ $view.image }}
        pullPolicy: {{ $view.imagePullPolicy }}
    {{- else if $viewCopy }}
    - name: flux-view
      emptyDir:
        {{- with $view.medium }}
        medium: {{ . }}
        {{- else }} {}
        {{- end }}
    {{- end }}
    {{- if .Values.munge.enabled }}
    - name: munge-installed
      emptyDir:
        medium: Memory
    {{- end }}
    {{- with .Values.sharedMemory }}
    # A larger /dev/shm than the runtime's 64 MiB, in memory.
    - name: shm
      emptyDir:
        medium: Memory
        sizeLimit: {{ . }}
    {{- end }}
    {{- if .Values.flux.state.enabled }}
    # Flux's state (flux.state): every pod mounts it (one pod template), the lead alone uses it.
    - name: state
      persistentVolumeClaim:
        claimName: {{ include "minicluster.stateClaimName" . }}
    {{- end }}
    {{- if and .Values.api.enabled .Values.api.requireAuth }}
    # The API's credentials (api.requireAuth), for the lead's API server.
    - name: api-credentials
      secret:
        secretName: {{ include "minicluster.apiSecretName" . }}
        defaultMode: 0444
    {{- end }}
    {{- if and .Values.api.enabled .Values.api.tls.secretName }}
    - name: api-tls
      secret:
        secretName: {{ .Values.api.tls.secretName }}
        defaultMode: 0444
    {{- end }}
    {{- with .Values.volumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/* minicluster.operatorEnv is the broker container's environment for the settings of the Flux
Operator's MiniCluster: logging, commands and batch (files/entrypoint.sh reads them). */}}
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
  {{- with ($c.securityContext | default $v.securityContext) }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
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
