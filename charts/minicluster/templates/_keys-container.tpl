{{/* minicluster.keysContainer is the keys sidecar beside the broker (flux-keygen sidecar): the keys, the parent broker's endpoint, the broker's readiness. */}}
{{- define "minicluster.keysContainer" }}
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
        # Every broker pod's keys container hands the broker's supervisor to the broker's
        # container, whose command (files/entrypoint.sh) waits for it and execs it.
        - --supervisor=/minicluster/keys/minicluster-broker
        {{- if .Values.api.enabled }}
        # The lead's keys container hands the API server, its credentials and its TLS key to
        # the broker's container.
        - --api-server=/minicluster/keys/minicluster-api
        {{- if .Values.api.requireAuth }}
        - --api-name={{ include "minicluster.apiSecretName" . }}
        {{- end }}
        {{- with .Values.api.tls.secretName }}
        - --api-tls-name={{ . }}
        {{- end }}
        {{- end }}
        {{- if or .Values.autoscale.enabled .Values.metrics.enabled }}
        # The lead's keys container hands the autoscaler and metrics server to the broker's container.
        - --autoscaler=/minicluster/keys/minicluster-autoscale
        {{- end }}
        {{- if .Values.autoscale.enabled }}
        # and applies the autoscaler's sizes to the Job (its only Kubernetes credentials are here).
        - --autoscale-dir=/minicluster/keys/autoscale
        - --min-size={{ int .Values.autoscale.minSize }}
        - --max-size={{ include "minicluster.maxSize" . }}
        {{- end }}
        - --wait-parent
        - --hosts-file=/minicluster/config/hosts
        - --topology={{ .Values.flux.topology }}
        # Deleted with its namespace, it deletes the Job and exits with this code, which fails the
        # Job too (broker-job.yaml): either lets Kubernetes remove the pods.
        - --namespace-deleted-code={{ include "minicluster.exitNamespaceDeleted" . }}
        - --job={{ include "minicluster.fullname" . }}
      env:
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
      securityContext:
        {{- include "minicluster.restrictedPodSecurity" . | nindent 8 }}
        {{- include "minicluster.restrictedContainerSecurity" . | nindent 8 }}
      # The pod is Ready once Flux counts its broker online (the supervisor's .online, served
      # here). The probes are this container's, which serves them, and the first waits a second:
      # on a busy node the kubelet starts this container up to two seconds after the broker's,
      # and its program takes a moment to listen; a probe sent before that fails with a "probe
      # failed" event (a busy node still has one now and then). No broker comes online within a
      # second of this container's start. An HTTP probe costs the node far less than an exec
      # probe would. The startup probe holds its answer until the broker comes online, or for 20 s
      # (keygen/sidecar/readiness.go), and the kubelet asks again as soon as it has one: the pod
      # starts within a tenth of a second of its broker, for one probe and one "probe failed"
      # event per 20 s of bootstrap where asking every second cost one of each a second. It never
      # gives up, since a broker may wait for its parent as long as that takes; the kubelet asks
      # the readiness probe at once when it succeeds. After that every 5 s is enough to follow a
      # broker that starts again in its container, and costs the node a fifth of probing every
      # second (a probe takes about 1 ms of CPU of the kubelet and 0.8 ms of this container).
      startupProbe:
        httpGet:
          path: /readyz?hold=20s
          port: {{ int .Values.flux.readinessPort }}
        initialDelaySeconds: 1
        periodSeconds: 1
        timeoutSeconds: 25
        failureThreshold: 2147483647
      readinessProbe:
        httpGet:
          path: /readyz
          port: {{ int .Values.flux.readinessPort }}
        periodSeconds: 5
        timeoutSeconds: 2
        failureThreshold: 2
      terminationMessagePolicy: FallbackToLogsOnError
      {{- with .Values.keygen.sidecarResources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      volumeMounts:
        - name: keys
          mountPath: /minicluster/keys
        - name: broker-config
          mountPath: /minicluster/config
          readOnly: true
        - name: api-token
          mountPath: /var/run/secrets/kubernetes.io/serviceaccount
          readOnly: true
{{- end }}
