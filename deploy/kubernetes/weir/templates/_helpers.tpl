{{/*
Names, labels and shared pieces of the Weir chart. The labels and ports are those of
weir/core/kubernetes_cluster.py, and the objects those of weir kubernetes-session
(weir/client/kubernetes_manifests.py); tests/integration/kubernetes checks they agree.
*/}}

{{- define "weir.clusterId" -}}
{{- $id := default .Release.Name .Values.clusterId -}}
{{- if or (gt (len $id) 45) (not (regexMatch "^[a-z]([-a-z0-9]*[a-z0-9])?$" $id)) -}}
{{- fail (printf "clusterId %q: expected at most 45 lowercase letters, digits and '-', starting with a letter and ending with a letter or digit" $id) -}}
{{- end -}}
{{- $id -}}
{{- end -}}

{{- define "weir.namespace" -}}
{{- default .Release.Namespace .Values.namespace -}}
{{- end -}}

{{- define "weir.image" -}}
{{- printf "%s:%s" .Values.image.repository .Values.image.tag -}}
{{- end -}}

{{- define "weir.replicas" -}}
{{- if .Values.highAvailability.enabled }}2{{ else }}1{{ end -}}
{{- end -}}

{{- define "weir.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- include "weir.clusterId" . -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "weir.claimName" -}}
{{- default (printf "%s-storage" (include "weir.clusterId" .)) .Values.storage.persistentVolumeClaim.existingClaim -}}
{{- end -}}

{{/* The labels of every object of the cluster. */}}
{{- define "weir.labels" -}}
app: {{ include "weir.clusterId" . }}
type: weir-native-kubernetes
{{- end -}}

{{/* Metadata labels: the cluster's, and Helm's own. */}}
{{- define "weir.metadataLabels" -}}
{{ include "weir.labels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "weir.masterLabels" -}}
{{ include "weir.labels" . }}
component: jobmanager
{{- end -}}

{{- define "weir.taskManagerLabels" -}}
{{ include "weir.labels" . }}
component: taskmanager
{{- end -}}

{{- define "weir.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "weir.containerSecurityContext" -}}
allowPrivilegeEscalation: false
capabilities:
  drop:
    - ALL
{{- end -}}

{{- define "weir.imagePullSecrets" -}}
{{- if .Values.image.pullSecrets -}}
imagePullSecrets:
{{- range .Values.image.pullSecrets }}
  - name: {{ . }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* The volumes the master and every TaskManager pod share: TLS files and the claim. */}}
{{- define "weir.volumes" -}}
{{- if .Values.tls.enabled }}
- name: secret-{{ required "tls.secretName is required when tls.enabled" .Values.tls.secretName }}
  secret:
    secretName: {{ .Values.tls.secretName }}
{{- end }}
{{- if .Values.storage.persistentVolumeClaim.enabled }}
- name: claim-{{ include "weir.claimName" . }}
  persistentVolumeClaim:
    claimName: {{ include "weir.claimName" . }}
{{- end }}
{{- end -}}

{{- define "weir.volumeMounts" -}}
{{- if .Values.tls.enabled }}
- name: secret-{{ .Values.tls.secretName }}
  mountPath: {{ .Values.tls.mountPath }}
  readOnly: true
{{- end }}
{{- if .Values.storage.persistentVolumeClaim.enabled }}
- name: claim-{{ include "weir.claimName" . }}
  mountPath: {{ .Values.storage.mountPath }}
{{- end }}
{{- end -}}

{{/* weir-conf.yaml: the chart's values as Weir's keys, then weirConf. */}}
{{- define "weir.conf" -}}
{{- $id := include "weir.clusterId" . -}}
{{- $ns := include "weir.namespace" . -}}
{{- $conf := dict
  "spark.master" "k8s://https://kubernetes.default.svc"
  "kubernetes.cluster-id" $id
  "kubernetes.namespace" $ns
  "kubernetes.container.image.ref" (include "weir.image" .)
  "kubernetes.container.image.pull-policy" .Values.image.pullPolicy
  "kubernetes.jobmanager.replicas" (include "weir.replicas" .)
  "kubernetes.jobmanager.cpu.amount" (toString .Values.master.cpu)
  "kubernetes.jobmanager.cpu.limit-factor" (toString .Values.master.cpuLimitFactor)
  "kubernetes.taskmanager.cpu.amount" (toString .Values.taskManagers.cpu)
  "kubernetes.taskmanager.cpu.limit-factor" (toString .Values.taskManagers.cpuLimitFactor)
  "kubernetes.pod-template-file.taskmanager" "/opt/weir/conf/taskmanager-pod-template.yaml"
  "jobmanager.memory.process.size" (toString .Values.master.memory)
  "jobmanager.bind-host" "0.0.0.0"
  "jobmanager.rpc.address" (printf "%s-driver.%s.svc" $id $ns)
  "jobmanager.rpc.port" (toString .Values.master.rpcPort)
  "rest.bind-address" "0.0.0.0"
  "rest.port" (toString .Values.rest.port)
  "kubernetes.rest-service.exposed.type" .Values.rest.serviceType
  "taskmanager.bind-host" "0.0.0.0"
  "taskmanager.host" ""
  "taskmanager.rpc.port" "6122"
  "taskmanager.data.port" "6121"
  "taskmanager.numberOfTaskSlots" (toString .Values.taskManagers.slots)
  "taskmanager.memory.process.size" (toString .Values.taskManagers.memory)
  "resourcemanager.taskmanager.min" (toString .Values.taskManagers.count)
  "resourcemanager.taskmanager.max" (toString .Values.taskManagers.count)
-}}
{{- if .Values.image.pullSecrets -}}
{{- $_ := set $conf "kubernetes.container.image.pull-secrets" (join ";" .Values.image.pullSecrets) -}}
{{- end -}}
{{- if .Values.highAvailability.enabled -}}
{{- $type := default "zookeeper" .Values.highAvailability.type -}}
{{- $_ := set $conf "high-availability.type" $type -}}
{{- if eq $type "zookeeper" -}}
{{- $_ := set $conf "high-availability.zookeeper.quorum" (required "highAvailability.zookeeperQuorum is required when highAvailability.type is zookeeper" .Values.highAvailability.zookeeperQuorum) -}}
{{- $_ := set $conf "high-availability.cluster-id" (printf "/%s" $id) -}}
{{- else if ne $type "kubernetes" -}}
{{- fail (printf "highAvailability.type %q: expected kubernetes or zookeeper" $type) -}}
{{- end -}}
{{- $_ := set $conf "high-availability.storageDir" (required "highAvailability.storageDir is required when highAvailability.enabled" .Values.highAvailability.storageDir) -}}
{{- end -}}
{{- if .Values.tls.enabled -}}
{{- $dir := .Values.tls.mountPath -}}
{{- $_ := set $conf "kubernetes.secrets" (printf "%s:%s" .Values.tls.secretName $dir) -}}
{{- $_ := set $conf "security.ssl.internal.enabled" "true" -}}
{{- $_ := set $conf "security.ssl.internal.cert" (printf "%s/internal.pem" $dir) -}}
{{- $_ := set $conf "security.ssl.internal.key" (printf "%s/internal-key.pem" $dir) -}}
{{- $_ := set $conf "security.ssl.internal.trust-cert" (printf "%s/ca.pem" $dir) -}}
{{- $_ := set $conf "security.ssl.rest.enabled" "true" -}}
{{- $_ := set $conf "security.ssl.rest.cert" (printf "%s/rest.pem" $dir) -}}
{{- $_ := set $conf "security.ssl.rest.key" (printf "%s/rest-key.pem" $dir) -}}
{{- $_ := set $conf "security.ssl.rest.trust-cert" (printf "%s/ca.pem" $dir) -}}
{{- $_ := set $conf "security.ssl.verify-hostname" (toString .Values.tls.verifyHostname) -}}
{{- end -}}
{{- if .Values.authToken.secretName -}}
{{- $_ := set $conf "kubernetes.auth-token.secret" (printf "%s:%s" .Values.authToken.secretName .Values.authToken.key) -}}
{{- end -}}
{{- with .Values.s3.endpoint -}}
{{- $_ := set $conf "s3.endpoint" . -}}
{{- end -}}
{{- if .Values.s3.pathStyleAccess -}}
{{- $_ := set $conf "s3.path.style.access" "true" -}}
{{- end -}}
{{- with .Values.s3.credentialsSecret -}}
{{- $_ := set $conf "kubernetes.env.secretKeyRef" (printf "env:AWS_ACCESS_KEY_ID,secret:%s,key:%s;env:AWS_SECRET_ACCESS_KEY,secret:%s,key:%s" . $.Values.s3.accessKeyKey . $.Values.s3.secretKeyKey) -}}
{{- end -}}
{{- if .Values.storage.persistentVolumeClaim.enabled -}}
{{- $_ := set $conf "kubernetes.persistent-volume-claims" (printf "%s:%s" (include "weir.claimName" .) .Values.storage.mountPath) -}}
{{- end -}}
{{- if not .Values.serviceAccount.create -}}
{{- $_ := set $conf "kubernetes.service-account" .Values.serviceAccount.name -}}
{{- end -}}
{{- range $key, $value := .Values.weirConf -}}
{{- $_ := set $conf $key (toString $value) -}}
{{- end -}}
{{- toYaml $conf -}}
{{- end -}}

{{/* The environment every pod takes from Secrets: kubernetes.env.secretKeyRef of
weir-conf.yaml (env:NAME,secret:SECRET,key:KEY;...), from s3.credentialsSecret or weirConf. */}}
{{- define "weir.secretEnv" -}}
{{- $conf := include "weir.conf" . | fromYaml -}}
{{- range $entry := splitList ";" (get $conf "kubernetes.env.secretKeyRef" | default "") -}}
{{- if trim $entry -}}
{{- $ref := dict -}}
{{- range $part := splitList "," $entry -}}
{{- $field := splitList ":" $part -}}
{{- $_ := set $ref (first $field | trim) (last $field | trim) -}}
{{- end }}
- name: {{ $ref.env }}
  valueFrom:
    secretKeyRef:
      name: {{ $ref.secret }}
      key: {{ $ref.key }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The Pod Spark starts every TaskManager pod from (spark.kubernetes.executor.podTemplateFile). */}}
{{- define "weir.taskManagerPodTemplate" -}}
apiVersion: v1
kind: Pod
metadata:
  labels:
    {{- include "weir.taskManagerLabels" . | nindent 4 }}
spec:
  automountServiceAccountToken: false
  securityContext:
    {{- include "weir.podSecurityContext" . | nindent 4 }}
  {{- with include "weir.imagePullSecrets" . }}
  {{- . | nindent 2 }}
  {{- end }}
  containers:
    - name: taskmanager
      ports:
        - name: tm-rpc
          containerPort: 6122
        - name: tm-data
          containerPort: 6121
      securityContext:
        {{- include "weir.containerSecurityContext" . | nindent 8 }}
      {{- with include "weir.secretEnv" . | trim }}
      # Spark adds its own environment to this.
      env:
        {{- . | nindent 8 }}
      {{- end }}
      {{- $mounts := include "weir.volumeMounts" . | trim }}
      {{- if $mounts }}
      volumeMounts:
        {{- $mounts | nindent 8 }}
      {{- else }}
      volumeMounts: []
      {{- end }}
  {{- $volumes := include "weir.volumes" . | trim }}
  {{- if $volumes }}
  volumes:
    {{- $volumes | nindent 4 }}
  {{- else }}
  volumes: []
  {{- end }}
{{- end -}}
