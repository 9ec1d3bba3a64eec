{{/* Chart name, possibly overridden. */}}
{{- define "pdu-bridge.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: the release name, plus the chart name unless the release name already contains it. */}}
{{- define "pdu-bridge.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "pdu-bridge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pdu-bridge.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "pdu-bridge.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "pdu-bridge.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "pdu-bridge.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "pdu-bridge.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "pdu-bridge.configMapName" -}}
{{- printf "%s-config" (include "pdu-bridge.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Secret the pod takes SERVICE_* variables from; empty when there is none. */}}
{{- define "pdu-bridge.secretName" -}}
{{- if .Values.existingSecret }}
{{- .Values.existingSecret }}
{{- else if .Values.secrets }}
{{- include "pdu-bridge.fullname" . }}
{{- end }}
{{- end }}

{{- define "pdu-bridge.apiServiceName" -}}
{{- default "api" .Values.service.api.nameOverride }}
{{- end }}

{{- define "pdu-bridge.apiEnabled" -}}
{{- if dig "Api" "Enabled" false .Values.config }}true{{ end }}
{{- end }}

{{- define "pdu-bridge.healthEnabled" -}}
{{- if dig "Health" "Enabled" true .Values.config }}true{{ end }}
{{- end }}

{{- define "pdu-bridge.apiPort" -}}
{{- dig "Api" "Port" 8082 .Values.config }}
{{- end }}

{{- define "pdu-bridge.trapsEnabled" -}}
{{- if dig "Traps" "Enabled" false .Values.config }}true{{ end }}
{{- end }}

{{- define "pdu-bridge.trapsPort" -}}
{{- dig "Traps" "Port" 1162 .Values.config }}
{{- end }}

{{- define "pdu-bridge.healthPort" -}}
{{- dig "Health" "Port" 8081 .Values.config }}
{{- end }}

{{/*
Several replicas share the fleet through leases (config.Cluster, docs/cluster.md): on when
replicaCount is above 1, cluster.enabled is true or config.Cluster.Enabled is true. "true" or empty.
*/}}
{{- define "pdu-bridge.clusterEnabled" -}}
{{- if or (gt (int .Values.replicaCount) 1) .Values.cluster.enabled (dig "Cluster" "Enabled" false (.Values.config | default dict)) }}true{{ end }}
{{- end }}

{{/* State.Dir on a volume: single-replica mode with state.persistence.enabled (docs/energy.md). */}}
{{- define "pdu-bridge.statePersistence" -}}
{{- if and .Values.state.persistence.enabled (not (include "pdu-bridge.clusterEnabled" .)) }}true{{ end }}
{{- end }}

{{/* The claim State.Dir is on: the user's, else the chart's. */}}
{{- define "pdu-bridge.stateClaim" -}}
{{- .Values.state.persistence.existingClaim | default (printf "%s-state" (include "pdu-bridge.fullname" .)) }}
{{- end }}

{{/* The cluster keeps its leases in the Kubernetes API (the chart's default backend): it needs the Role. */}}
{{- define "pdu-bridge.leaseRbac" -}}
{{- if and (include "pdu-bridge.clusterEnabled" .) (eq (dig "Cluster" "Backend" "kubernetes" (.Values.config | default dict)) "kubernetes") }}true{{ end }}
{{- end }}

{{/*
The configuration file the chart renders: `config`, with Cluster on (Backend kubernetes unless set)
when the cluster is. The member name is left to the service: HOSTNAME, which the chart sets to the
pod's name.
*/}}
{{- define "pdu-bridge.renderedConfig" -}}
{{- $config := deepCopy (.Values.config | default dict) }}
{{- if include "pdu-bridge.clusterEnabled" . }}
{{- $cluster := deepCopy (get $config "Cluster" | default dict) }}
{{- $_ := set $cluster "Enabled" true }}
{{- if not (get $cluster "Backend") }}
{{- $_ := set $cluster "Backend" "kubernetes" }}
{{- end }}
{{- $_ := set $config "Cluster" $cluster }}
{{- end }}
{{- if include "pdu-bridge.statePersistence" . }}
{{- $state := deepCopy (get $config "State" | default dict) }}
{{- if not (get $state "Dir") }}
{{- $_ := set $state "Dir" .Values.state.persistence.mountPath }}
{{- end }}
{{- $_ := set $config "State" $state }}
{{- end }}
{{- with .Values.oidc.publicUrl }}
{{- $api := deepCopy (get $config "Api" | default dict) }}
{{- $_ := set $api "PublicUrl" . }}
{{- $_ := set $config "Api" $api }}
{{- end }}
{{- toYaml $config }}
{{- end }}

{{/*
Refuses values that would deploy something broken or leak a secret. Included by every template that
depends on them, so `helm template` and `helm install` stop with one clear message.
*/}}
{{- define "pdu-bridge.validate" -}}
{{- $config := .Values.config | default dict }}
{{- $hint := "secrets do not belong in the ConfigMap: put it in `secrets` (or `existingSecret`) as" }}
{{- if dig "Api" "ApiKey" "" $config }}
{{- fail (printf "config.Api.ApiKey is set: %s SERVICE_API_KEY" $hint) }}
{{- end }}
{{- if dig "Api" "Oidc" "ClientSecret" "" $config }}
{{- fail (printf "config.Api.Oidc.ClientSecret is set: %s SERVICE_OIDC_CLIENT_SECRET (or use oidc.clientSecret)" $hint) }}
{{- end }}
{{- if dig "Mqtt" "Credentials" "Password" "" $config }}
{{- fail (printf "config.Mqtt.Credentials.Password is set: %s SERVICE_MQTT_PASSWORD" $hint) }}
{{- end }}
{{- range $id, $pdu := (dig "Pdus" dict $config) }}
{{- if dig "Credentials" "Password" "" ($pdu | default dict) }}
{{- fail (printf "config.Pdus.%s.Credentials.Password is set: %s SERVICE_PDU_%s_PASSWORD" $id $hint (upper $id | replace "-" "_")) }}
{{- end }}
{{- range $key, $variable := dict "Community" "COMMUNITY" "WriteCommunity" "WRITE_COMMUNITY" "AuthKey" "AUTH_KEY" "PrivKey" "PRIV_KEY" }}
{{- if dig "Snmp" $key "" ($pdu | default dict) }}
{{- fail (printf "config.Pdus.%s.Snmp.%s is set: %s SERVICE_PDU_%s_%s" $id $key $hint (upper $id | replace "-" "_") $variable) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and (dig "Api" "Oidc" "Enabled" false $config) (not .Values.oidc.publicUrl) (not (dig "Api" "PublicUrl" "" $config)) }}
{{- fail "config.Api.Oidc.Enabled needs the address browsers use: set oidc.publicUrl (or config.Api.PublicUrl); the sign-in's redirect URI is never taken from a request's Host header" }}
{{- end }}
{{- if not (has .Values.configSource (list "file" "kubernetes")) }}
{{- fail (printf "configSource must be file or kubernetes (got %v)" .Values.configSource) }}
{{- end }}
{{- range $key, $_ := .Values.secrets }}
{{- if not (hasPrefix "SERVICE_" $key) }}
{{- fail (printf "secrets.%s: keys are SERVICE_* environment variables (e.g. SERVICE_API_KEY)" $key) }}
{{- end }}
{{- end }}
{{- if .Values.healthProbes.enabled }}
{{- if not (include "pdu-bridge.healthEnabled" .) }}
{{- fail "healthProbes.enabled needs config.Health.Enabled: the probes use the health listener (or set healthProbes.enabled=false)" }}
{{- end }}
{{- if hasPrefix "127." (dig "Health" "Bind" "0.0.0.0" $config | toString) }}
{{- fail "config.Health.Bind is a loopback address: the kubelet's probes could not reach it (use 0.0.0.0)" }}
{{- end }}
{{- end }}
{{- if .Values.metrics.serviceMonitor.enabled }}
{{- if not (include "pdu-bridge.healthEnabled" .) }}
{{- fail "metrics.serviceMonitor.enabled needs config.Health.Enabled: the metrics are served on the health listener" }}
{{- end }}
{{- if not (dig "Metrics" "Enabled" true $config) }}
{{- fail "metrics.serviceMonitor.enabled needs config.Metrics.Enabled" }}
{{- end }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) (eq (toString (dig "Cluster" "Enabled" "unset" $config)) "false") }}
{{- fail "replicaCount above 1 needs the cluster: remove config.Cluster.Enabled=false (replicas without it would all poll and write to the same PDUs)" }}
{{- end }}
{{- if and (include "pdu-bridge.clusterEnabled" .) (not (dig "Mqtt" "Connection" "Host" "" $config)) }}
{{- fail "the cluster (replicaCount above 1, cluster.enabled or config.Cluster.Enabled) needs an external broker in config.Mqtt.Connection.Host: each replica's embedded broker would be its own" }}
{{- end }}
{{- if lt (int .Values.replicaCount) 0 }}
{{- fail "replicaCount must not be negative" }}
{{- end }}
{{- if and (include "pdu-bridge.clusterEnabled" .) (eq (dig "Cluster" "Backend" "kubernetes" .Values.config) "etcd") }}
{{- /* etcd holds the leases, once-only ids and reboot holds: production needs TLS and authentication (docs/cluster.md). */ -}}
{{- range $endpoint := (dig "Cluster" "Etcd" "Endpoints" (list "http://127.0.0.1:2379") .Values.config) }}
{{- if not (hasPrefix "https://" $endpoint) }}
{{- fail (printf "config.Cluster.Etcd.Endpoints: %s is not https://: etcd needs TLS (and authentication) in production (docs/cluster.md)" $endpoint) }}
{{- end }}
{{- end }}
{{- if not (or .Values.existingSecret (hasKey (.Values.secrets | default dict) "SERVICE_ETCD_USERNAME")) }}
{{- fail "the etcd backend needs authentication: put SERVICE_ETCD_USERNAME and SERVICE_ETCD_PASSWORD in secrets (or existingSecret) (docs/cluster.md)" }}
{{- end }}
{{- end }}
{{- if and .Values.ingress.enabled (not (include "pdu-bridge.apiEnabled" .)) }}
{{- fail "ingress.enabled needs config.Api.Enabled: the Ingress routes to the api Service" }}
{{- end }}
{{- end }}
