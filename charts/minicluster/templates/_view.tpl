{{/* minicluster.liveJob is the running MiniCluster's Job as JSON ("{}" on install or with no
cluster). Looked up once per render and kept in the root context, which every template of the
chart shares: each of Helm's lookups runs API discovery first, and a render asks for it often. */}}
{{- define "minicluster.liveJob" -}}
{{- if not (hasKey $ "mcLiveJob") -}}
{{- $_ := set $ "mcLiveJob" (lookup "batch/v1" "Job" .Release.Namespace (include "minicluster.fullname" .) | toJson) -}}
{{- end -}}
{{- get $ "mcLiveJob" -}}
{{- end -}}

{{/* minicluster.viewMode is how the view reaches the pods: copy or image. auto: the running
MiniCluster's mode (an upgrade never switches it), else image where Kubernetes mounts image
volumes by default (1.35 and later), else copy. */}}
{{- define "minicluster.viewMode" -}}
{{- $mode := .Values.flux.view.mode -}}
{{- if eq $mode "auto" -}}
{{- $live := include "minicluster.liveJob" . | fromJson -}}
{{- if $live -}}
{{- $mode = "copy" -}}
{{- range (dig "spec" "template" "spec" "volumes" (list) $live) -}}
{{- if and (eq .name "flux-view") (hasKey . "image") -}}
{{- $mode = "image" -}}
{{- end -}}
{{- end -}}
{{- else if semverCompare ">=1.35.0-0" $.Capabilities.KubeVersion.Version -}}
{{- $mode = "image" -}}
{{- else -}}
{{- $mode = "copy" -}}
{{- end -}}
{{- end -}}
{{- $mode -}}
{{- end -}}

{{/* minicluster.viewContainer is the container that copies Flux from the view image beside the broker (files/view-copy.sh), when the view is copied. */}}
{{- define "minicluster.viewContainer" }}
{{- $view := .Values.flux.view }}
{{- $viewCopy := and $view.enabled (eq (include "minicluster.viewMode" .) "copy") }}
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
      {{- with $view.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with ($view.securityContext | default .Values.securityContext) }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      volumeMounts:
        - name: flux-view
          mountPath: {{ $view.mountPath }}
        # Only for the supervisor's .ended.
        - name: keys
          mountPath: /minicluster/keys
          readOnly: true
    {{- end }}
{{- end }}
