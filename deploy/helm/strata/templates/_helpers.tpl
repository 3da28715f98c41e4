{{/* The release's name for its objects (at most 52 characters: StatefulSet pods append more). */}}
{{- define "strata.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "strata.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "strata.labels" -}}
{{ include "strata.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The StatefulSet of pool N: the release's name for the first, NAME-poolN for the others. */}}
{{- define "strata.poolName" -}}
{{- $root := index . 0 -}}{{- $i := index . 1 -}}
{{- if eq (int $i) 0 -}}{{ include "strata.fullname" $root }}{{- else -}}{{ printf "%s-pool%d" (include "strata.fullname" $root) (int $i) }}{{- end -}}
{{- end -}}

{{- define "strata.headless" -}}{{ include "strata.fullname" . }}-hl{{- end -}}

{{- define "strata.scheme" -}}{{ if .Values.tls.enabled }}https{{ else }}http{{ end }}{{- end -}}

{{- define "strata.secretName" -}}
{{- .Values.auth.existingSecret | default (printf "%s-root" (include "strata.fullname" .)) -}}
{{- end -}}

{{- define "strata.tlsSecretName" -}}
{{- .Values.tls.existingSecret | default (printf "%s-tls" (include "strata.fullname" .)) -}}
{{- end -}}

{{/* `{A...B}`, or just A when the range has one value (`{0...0}` is not a range). */}}
{{- define "strata.range" -}}
{{- if eq (int .) 1 -}}0{{- else -}}{{ printf "{0...%d}" (sub (int .) 1) }}{{- end -}}
{{- end -}}

{{/* Every pool's endpoints, space-separated: the same STRATA_VOLUMES on every server. */}}
{{- define "strata.volumes" -}}
{{- $root := . -}}
{{- $out := list -}}
{{- range $i, $pool := .Values.pools -}}
{{- $name := include "strata.poolName" (list $root $i) -}}
{{- $out = append $out (printf "%s://%s-%s.%s.%s.svc.%s:9000/data%s" (include "strata.scheme" $root) $name (include "strata.range" $pool.servers) (include "strata.headless" $root) $root.Release.Namespace $root.Values.clusterDomain (include "strata.range" $pool.drivesPerServer)) -}}
{{- end -}}
{{- join " " $out -}}
{{- end -}}

{{/* The largest erasure set size in 2..16 that divides the drive count (1 for one drive). */}}
{{- define "strata.setSize" -}}
{{- $drives := int . -}}
{{- $size := 0 -}}
{{- if eq $drives 1 -}}{{- $size = 1 -}}{{- end -}}
{{- range $k := until 15 -}}
{{- $s := sub 16 $k -}}
{{- if and (eq $size 0) (eq (mod $drives $s) 0) -}}{{- $size = $s -}}{{- end -}}
{{- end -}}
{{- $size -}}
{{- end -}}

{{/* Parity for a set size: STRATA's EC:N when given, else the default by size. */}}
{{- define "strata.parity" -}}
{{- $root := index . 0 -}}{{- $size := int (index . 1) -}}
{{- with $root.Values.storageClass.standard -}}
{{- if not (regexMatch "^EC:[0-9]+$" .) -}}{{- fail (printf "storageClass.standard=%s: EC:N expected" .) -}}{{- end -}}
{{- trimPrefix "EC:" . -}}
{{- else -}}
{{- if le $size 1 -}}0{{- else if le $size 3 -}}1{{- else if le $size 5 -}}2{{- else if le $size 7 -}}3{{- else -}}4{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Servers of a pool that may be down at once with every erasure set keeping its write quorum.
Sets take drives j, j+c, j+2c, ... of the pool's drives listed server by server (c = the set
count), so a server holds at most ceil(S/N) drives of a set (S = set size, N = servers).
Write quorum: S-P drives, or S-P+1 when S-P = P.
*/}}
{{- define "strata.serversDownMax" -}}
{{- $root := index . 0 -}}{{- $pool := index . 1 -}}
{{- $drives := mul (int $pool.servers) (int $pool.drivesPerServer) -}}
{{- $size := int (include "strata.setSize" $drives) -}}
{{- if eq $size 0 -}}{{- fail (printf "a pool of %d servers x %d drives: no erasure set size from 2 to 16 divides %d drives" (int $pool.servers) (int $pool.drivesPerServer) $drives) -}}{{- end -}}
{{- $parity := int (include "strata.parity" (list $root $size)) -}}
{{- if and (gt $size 1) (gt (mul $parity 2) $size) -}}{{- fail (printf "parity %d is more than half of the pool's sets of %d drives" $parity $size) -}}{{- end -}}
{{- $data := sub $size $parity -}}
{{- $quorum := $data -}}{{- if eq $data $parity -}}{{- $quorum = add $data 1 -}}{{- end -}}
{{- $perServer := div (add $size (sub (int $pool.servers) 1)) (int $pool.servers) -}}
{{- div (sub $size $quorum) $perServer -}}
{{- end -}}
