{{/*
minicluster.file is a file of the chart's files/ as the body of a literal block scalar (key: |),
indented by indent; call with (dict "root" . "name" NAME "indent" N). Blank lines stay empty.
*/}}
{{- define "minicluster.file" -}}
{{- $text := .root.Files.Get (printf "files/%s" .name) -}}
{{- if not $text -}}
{{- fail (printf "files/%s is missing from the chart or empty (check .helmignore)" .name) -}}
{{- end -}}
{{- regexReplaceAll "(?m)^ +$" ($text | trimSuffix "\n" | nindent (int .indent)) "" -}}
{{- end -}}
