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
      # here): an HTTP probe, which costs the node far less than an exec probe would. It is this
      # container's, which serves it, and the first waits a second: on a busy node the kubelet
      # starts this container up to two seconds after the broker's, and its program takes a
      # moment to listen; a probe sent before that failed with a "probe failed" event. No broker
      # comes online within a second of this container's start. Until its broker has been online
      # the server holds each answer until it is, or for 20 s (keygen/sidecar/readiness.go), and
      # the kubelet asks again as soon as it has one: the pod is Ready within a tenth of a second
      # of its broker, for one probe and one "probe failed" event per 20 s of bootstrap, and with
      # a readiness probe alone (a startup probe costs every pod one more status update). After
      # that each answer is at once, and every 5 s is enough to follow a broker that starts again
      # in its container (a probe takes about 1 ms of CPU of the kubelet and 0.8 ms of this
      # container).
      readinessProbe:
        httpGet:
          path: /readyz?hold=20s
          port: {{ int .Values.flux.readinessPort }}
        initialDelaySeconds: 1
        periodSeconds: 5
        timeoutSeconds: 25
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
