{{/* Names and labels. */}}
{{- define "fleetd.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{- define "fleetd.labels" -}}
app.kubernetes.io/name: fleetd
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "fleetd.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* The hardening of configs/fleetd.service, as Kubernetes says it. */}}
{{- define "fleetd.podSecurity" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "fleetd.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
Init containers copying the keys from the secret volume (0440 under fsGroup:
a non-root pod can read a secret no other way) into a memory-backed emptyDir
with mode 0600, the only mode fleetd loads keys with.
*/}}
{{- define "fleetd.keyInit" -}}
{{- $root := .root -}}
{{- range $k := list "fleet" "sponsor" }}
- name: import-{{ $k }}-key
  image: {{ include "fleetd.image" $root }}
  imagePullPolicy: {{ $root.Values.image.pullPolicy }}
  args: ["keys", "import", "/etc/fleetd/secret/{{ $k }}.key", "--out", "/var/run/fleetd/keys/{{ $k }}.key"]
  securityContext:
    {{- include "fleetd.containerSecurity" $root | nindent 4 }}
  resources:
    requests: {cpu: 10m, memory: 16Mi}
    limits: {cpu: 100m, memory: 64Mi}
  volumeMounts:
    - {name: keys-secret, mountPath: /etc/fleetd/secret, readOnly: true}
    - {name: keys, mountPath: /var/run/fleetd/keys}
{{- end }}
{{- end -}}

{{- define "fleetd.volumes" -}}
- name: keys-secret
  secret:
    secretName: {{ .Values.keysSecret }}
    defaultMode: 0400
- name: keys
  emptyDir: {medium: Memory, sizeLimit: 1Mi}
- name: config
  configMap:
    name: {{ include "fleetd.fullname" . }}-config
- name: tmp
  emptyDir: {sizeLimit: 256Mi}
{{- end -}}

{{- define "fleetd.mounts" -}}
- {name: keys, mountPath: /var/run/fleetd/keys, readOnly: true}
- {name: config, mountPath: /etc/fleetd, readOnly: true}
- {name: tmp, mountPath: /tmp}
{{- end -}}

{{/* A Job's pod failure policy from fleetd probe's exit statuses. */}}
{{- define "fleetd.failurePolicy" -}}
podFailurePolicy:
  rules:
    - action: FailJob   # 2: configuration error, retrying cannot help
      onExitCodes: {containerName: fleetd, operator: In, values: [2]}
    - action: FailJob   # 3: paused by the kill switch; the next schedule tries again
      onExitCodes: {containerName: fleetd, operator: In, values: [3]}
    - action: Ignore    # evicted or preempted: not the probe's fault
      onPodConditions: [{type: DisruptionTarget}]
{{- end -}}
