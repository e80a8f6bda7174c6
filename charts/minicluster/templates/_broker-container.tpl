{{/* minicluster.brokerContainer is the broker's container, first in the pod (kustomizations address it as containers/0): files/entrypoint.sh execs the supervisor (minicluster-broker), which runs Flux's broker. */}}
{{- define "minicluster.brokerContainer" }}
{{- $view := .Values.flux.view }}
{{- $viewCopy := and $view.enabled (eq (include "minicluster.viewMode" .) "copy") }}
{{- $viewImage := and $view.enabled (eq (include "minicluster.viewMode" .) "image") }}
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
        # The helpers' shared directories: the supervisor waits for each one's .ready.
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
        # Fixed paths the supervisor installs the certificate and writes R to (broker.toml names them).
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
        # api.enabled: the lead serves the Flux RESTful API on this port (its supervisor starts minicluster-api).
        - name: MINICLUSTER_API_PORT
          value: {{ int .Values.api.port | quote }}
        # What the keys container hands over for it: the credentials (api.requireAuth), the TLS key.
        - name: MINICLUSTER_API_AUTH
          value: {{ .Values.api.requireAuth | quote }}
        - name: MINICLUSTER_API_TOKEN_LIFETIME
          value: {{ .Values.api.tokenLifetime | quote }}
        - name: MINICLUSTER_API_TLS
          value: {{ ne .Values.api.tls.secretName "" | quote }}
        {{- end }}
        {{- if .Values.autoscale.enabled }}
        # autoscale.enabled: the lead sizes the MiniCluster (its supervisor starts minicluster-autoscale).
        - name: MINICLUSTER_AUTOSCALE
          value: {{ printf "--autoscale --min-size=%d --max-size=%s --idle=%ds" (int .Values.autoscale.minSize) (include "minicluster.maxSize" .) (int .Values.autoscale.idleSeconds) | quote }}
        # flux jobs shows why a job waits while the MiniCluster grows for it (its memo
        # user.autoscale, set by the autoscaler) after flux-core's default columns.
        - name: FLUX_JOBS_FORMAT_DEFAULT
          value: "{id.f58:>12} ?:{queue:<8.8} +:{username:<8} {name:<10.10+} {status_abbrev:>2.2} {ntasks:>6} {nnodes:>6h} {contextual_time!F:>8h} {contextual_info} ?:{user.autoscale}"
        {{- end }}
        {{- if or .Values.autoscale.enabled .Values.metrics.enabled }}
        - name: MINICLUSTER_AUTOSCALE_EVERY
          value: {{ printf "%ds" (int .Values.autoscale.intervalSeconds) | quote }}
        {{- end }}
        {{- if .Values.metrics.enabled }}
        # metrics.enabled: the lead serves Prometheus metrics on this port.
        - name: MINICLUSTER_METRICS_PORT
          value: {{ int .Values.metrics.port | quote }}
        {{- end }}
        # For kubectl exec: flux (and flux proxy $FLUX_URI) reach this pod's broker, whose
        # socket the supervisor pins at the same path in every pod. PATH stays the image's: a
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
        {{- if .Values.metrics.enabled }}
        - name: metrics
          containerPort: {{ int .Values.metrics.port }}
          protocol: TCP
        {{- end }}
        {{- if .Values.api.enabled }}
        - name: api
          containerPort: {{ int .Values.api.port }}
          protocol: TCP
        {{- end }}
      {{- with .Values.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.lifecycle }}
      lifecycle:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- include "minicluster.containerSecurity" (dict "root" . "sc" .Values.securityContext) | nindent 8 }}
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
        # Writable: the supervisor leaves .ended here for the helpers as it exits.
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
        {{- if .Values.api.enabled }}
        - name: api-installed
          mountPath: /minicluster/api
        {{- end }}
        {{- with .Values.volumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
{{- end }}
