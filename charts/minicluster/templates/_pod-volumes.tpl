{{/* minicluster.podVolumes is the broker pod's volumes: the scripts and config, the keys, the view, shared memory, state, the API's Secrets and the user's. */}}
{{- define "minicluster.podVolumes" }}
{{- $view := .Values.flux.view }}
{{- $viewCopy := and $view.enabled (eq (include "minicluster.viewMode" .) "copy") }}
{{- $viewImage := and $view.enabled (eq (include "minicluster.viewMode" .) "image") }}
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
    {{- if .Values.api.enabled }}
    # The API's credentials and TLS key, private to the broker's user (files/entrypoint.sh).
    - name: api-installed
      emptyDir:
        medium: Memory
    {{- end }}
    {{- with .Values.volumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}
