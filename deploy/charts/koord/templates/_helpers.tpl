{{/* The image reference of a component: [host/]name:tag. The name is a
string (Koord's values) or Koordinator's {repository, tag}; a repository of
Koordinator's own images (koordinator-sh/...) is not Koord's and is ignored,
so that Koordinator's values file deploys Koord. */}}
{{- define "koord.image" -}}
{{- $root := index . 0 -}}{{- $image := index . 1 -}}{{- $default := index . 2 -}}
{{- $name := $default -}}
{{- /* toString: `--set imageTag=4559440` (a short commit hash of digits) is an int64, which printf would render as %!s(int64=...) */ -}}
{{- $tag := toString (default $root.Chart.AppVersion $root.Values.imageTag) -}}
{{- if kindIs "string" $image -}}
{{- $name = $image -}}
{{- else if and (kindIs "map" $image) $image.repository (not (hasPrefix "koordinator-sh/" $image.repository)) -}}
{{- $name = $image.repository -}}
{{- with $image.tag }}{{ $tag = toString . }}{{ end -}}
{{- end -}}
{{- if $root.Values.imageRepositoryHost -}}
{{ printf "%s/%s:%s" $root.Values.imageRepositoryHost $name $tag }}
{{- else -}}
{{ printf "%s:%s" $name $tag }}
{{- end -}}
{{- end -}}

{{/* The namespace of every namespaced object: Koordinator's
installation.namespace when set, else the release's. */}}
{{- define "koord.namespace" -}}
{{- (.Values.installation | default dict).namespace | default .Release.Namespace -}}
{{- end -}}

{{/* Where a component's pods run and how they pull: imagePullSecrets
(a list of names or of {name}), nodeSelector, tolerations, and affinity
(Koordinator's nodeAffinity and Koord's affinity). */}}
{{- define "koord.placement" -}}
{{- $root := index . 0 -}}{{- $c := index . 1 -}}{{- $antiAffinity := index . 2 -}}
{{- $secrets := list -}}
{{- if kindIs "slice" $root.Values.imagePullSecrets -}}
{{- range $root.Values.imagePullSecrets -}}
{{- if kindIs "string" . }}{{ $secrets = append $secrets (dict "name" .) }}{{ else }}{{ $secrets = append $secrets . }}{{ end -}}
{{- end -}}
{{- end -}}
{{- with $secrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $c.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- $affinity := deepCopy ($c.affinity | default dict) -}}
{{- with $c.nodeAffinity }}{{ $_ := set $affinity "nodeAffinity" . }}{{ end -}}
{{- with $antiAffinity }}{{ $_ := set $affinity "podAntiAffinity" . }}{{ end -}}
{{- with $affinity }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Koordinator's <component>.log.level as klog's --v. */}}
{{- define "koord.logLevel" -}}
{{- with (index . 1).log }}{{ with .level }}
- --v={{ . }}
{{- end }}{{ end -}}
{{- end -}}

{{- define "koord.labels" -}}
app.kubernetes.io/part-of: koord
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{/* The shipped RBAC of a component, in the release's namespace. */}}
{{- define "koord.rbac" -}}
{{- $root := index . 0 -}}{{- $file := index . 1 -}}
{{ $root.Files.Get $file | replace "namespace: koord-system" (printf "namespace: %s" (include "koord.namespace" $root)) }}
{{- end -}}

{{/* --feature-gates for a component: the global featureGates, then the component's own. */}}
{{- define "koord.featureGates" -}}
{{- $root := index . 0 -}}{{- $own := index . 1 -}}
{{- $gates := list -}}
{{- with $root.Values.featureGates }}{{ $gates = append $gates . }}{{ end -}}
{{- with $own }}{{ $gates = append $gates . }}{{ end -}}
{{- if $gates }}
- --feature-gates={{ join "," $gates }}
{{- end -}}
{{- end -}}

{{/* A component's metrics port: Koordinator's <component>.metrics.port, else metricsPort. */}}
{{- define "koord.metricsPort" -}}
{{- (.metrics | default dict).port | default .metricsPort -}}
{{- end -}}
