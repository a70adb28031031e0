{{/* The image reference of a component: [host/]name:tag. */}}
{{- define "koord.image" -}}
{{- $root := index . 0 -}}{{- $name := index . 1 -}}
{{- /* toString: `--set imageTag=4559440` (a short commit hash of digits) is an int64, which printf would render as %!s(int64=...) */ -}}
{{- $tag := toString (default $root.Chart.AppVersion $root.Values.imageTag) -}}
{{- if $root.Values.imageRepositoryHost -}}
{{ printf "%s/%s:%s" $root.Values.imageRepositoryHost $name $tag }}
{{- else -}}
{{ printf "%s:%s" $name $tag }}
{{- end -}}
{{- end -}}

{{- define "koord.labels" -}}
app.kubernetes.io/part-of: koord
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{/* The shipped RBAC of a component, in the release's namespace. */}}
{{- define "koord.rbac" -}}
{{- $root := index . 0 -}}{{- $file := index . 1 -}}
{{ $root.Files.Get $file | replace "namespace: koord-system" (printf "namespace: %s" $root.Release.Namespace) }}
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
