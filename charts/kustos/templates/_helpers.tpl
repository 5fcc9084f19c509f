{{/*
Chart name, truncated to 63 characters (the DNS-1123 label limit).
*/}}
{{- define "kustos.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name, truncated to 63 characters. If the release name already contains
the chart name it is used as is.
*/}}
{{- define "kustos.fullname" -}}
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

{{/*
Chart name and version, as used by the helm.sh/chart label.
*/}}
{{- define "kustos.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Common labels, put on every object.
*/}}
{{- define "kustos.labels" -}}
helm.sh/chart: {{ include "kustos.chart" . }}
{{ include "kustos.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/component: controller
app.kubernetes.io/part-of: kustos
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Selector labels. These must never change between upgrades: Deployment selectors are immutable.
*/}}
{{- define "kustos.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kustos.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Name of the ServiceAccount to use.
*/}}
{{- define "kustos.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kustos.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Namespace holding Kustos's state Leases: stateNamespace, or the release namespace when empty.
*/}}
{{- define "kustos.stateNamespace" -}}
{{- default .Release.Namespace .Values.stateNamespace }}
{{- end }}

{{/*
Namespaces that need the coordination Role: the state namespace and, if different, the release
namespace (where the Pod runs and leader election may fall back to). Rendered as a JSON list.
*/}}
{{- define "kustos.coordinationNamespaces" -}}
{{- list (include "kustos.stateNamespace" .) .Release.Namespace | uniq | toJson }}
{{- end }}

{{/*
Container image reference: repository@digest when a digest is given, else repository:tag with
the tag defaulting to the chart's appVersion.
*/}}
{{- define "kustos.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/*
Checks that values.schema.json cannot express (or that must hold even when schema validation is
skipped). Each failure names the value and what to do about it.
*/}}
{{- define "kustos.validateValues" -}}
{{- if not (has (toString .Values.mode) (list "observe" "pr" "direct")) }}
{{- fail (printf "\n\nmode %q is not supported: use observe (Events and logs only), pr (pull requests in the GitOps repository) or direct (change objects no GitOps tool manages)." (toString .Values.mode)) }}
{{- end }}
{{- if eq (toString .Values.mode) "pr" }}
{{- if not .Values.git.repo }}
{{- fail "\n\nmode=pr needs git.repo (owner/name of the GitOps repository)." }}
{{- end }}
{{- if not .Values.github.existingSecret }}
{{- fail "\n\nmode=pr needs github.existingSecret: a Secret holding the GitHub App's private key (or a token, with github.tokenKey)." }}
{{- end }}
{{- if and (not .Values.github.tokenKey) (or (not (int64 .Values.github.appID)) (not (int64 .Values.github.installationID))) }}
{{- fail "\n\nmode=pr with a GitHub App needs github.appID and github.installationID (or set github.tokenKey to use a token)." }}
{{- end }}
{{- end }}
{{- if or (lt (float64 .Values.threshold) 0.0) (gt (float64 .Values.threshold) 100.0) }}
{{- fail (printf "\n\nthreshold must be a percentage between 0 and 100, got %v" .Values.threshold) }}
{{- end }}
{{- if eq (int .Values.metrics.port) (int .Values.health.port) }}
{{- fail (printf "\n\nmetrics.port and health.port must differ, both are %v" .Values.metrics.port) }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
{{- fail "\n\nreplicaCount > 1 requires leaderElection.enabled=true, or every replica would emit the same recommendations." }}
{{- end }}
{{- with .Values.inactivity }}
{{- if .enabled }}
{{- if not (include "kustos.prometheusURL" $) }}
{{- fail "\n\ninactivity.enabled needs prometheus.url (or the older inactivity.prometheusURL): activity comes from Prometheus." }}
{{- end }}
{{- if and .templateRefField (not .templateKind) }}
{{- fail (printf "\n\ninactivity.templateRefField=%s needs inactivity.templateKind, the group/version/Kind of the object it names." .templateRefField) }}
{{- end }}
{{- if and .templateKind (not .templateResource) }}
{{- fail (printf "\n\ninactivity.templateKind=%s needs inactivity.templateResource, its plural resource name (e.g. templates), for the chart's RBAC." .templateKind) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The extension server runs: "true" or "". It serves the expiry detector's extension links and the
inactivity detector's keep links, so either one with links to serve needs it.
*/}}
{{- define "kustos.extensionEnabled" -}}
{{- if and .Values.expiry.extension.enabled (or .Values.expiry.enabled (and .Values.inactivity.enabled .Values.inactivity.keep.periods)) }}true{{ end }}
{{- end }}

{{/*
A detector that notifies owners runs (expiry or inactivity; they share expiry.notify and
expiry.notificationInterval): "true" or "".
*/}}
{{- define "kustos.notifyEnabled" -}}
{{- if or .Values.expiry.enabled .Values.inactivity.enabled }}true{{ end }}
{{- end }}

{{/*
The notify webhook has a token Secret: "true" or "".
*/}}
{{- define "kustos.notifyTokenEnabled" -}}
{{- if and (include "kustos.notifyEnabled" .) .Values.expiry.notify.webhookURL .Values.expiry.notify.webhookTokenSecret }}true{{ end }}
{{- end }}

{{/*
The Secret holding the key that signs Cleaners' author stamps.
*/}}
{{- define "kustos.cleanerAuthorSecretName" -}}
{{- default (printf "%s-cleaner-author" (include "kustos.fullname" .)) .Values.cleaner.authorKey.existingSecret }}
{{- end }}

{{/*
Name of the Secret holding the extension links' key.
*/}}
{{- define "kustos.extensionSecretName" -}}
{{- default (printf "%s-extension" (include "kustos.fullname" .)) .Values.expiry.extension.existingSecret }}
{{- end }}

{{/*
The pod mounts Secrets or ConfigMaps: "true" or "".
*/}}
{{- define "kustos.hasVolumes" -}}
{{- if or (eq (toString .Values.mode) "pr") (include "kustos.cleanerAuthorMounted" .) (and (include "kustos.webhookEnabled" .) .Values.webhook.certManager.enabled) (include "kustos.extensionKeyMounted" .) (include "kustos.notifyTokenEnabled" .) (include "kustos.mailPasswordEnabled" .) (include "kustos.mailTemplatesEnabled" .) .Values.inactivity.enabled (include "kustos.prometheusURL" .) .Values.vsphere.enabled .Values.extraVolumes .Values.extraVolumeMounts }}true{{ end }}
{{- end }}

{{/*
The Cleaner author key / the extension key comes from a Secret the user names, mounted as a
file: "true" or "". Otherwise Kustos reads (and, the first time, creates) the chart-named Secret
through the API (--…-key-secret): no render generates a key.
*/}}
{{- define "kustos.cleanerAuthorMounted" -}}
{{- if and .Values.cleaner.enabled .Values.cleaner.authorKey.existingSecret }}true{{ end }}
{{- end }}

{{- define "kustos.extensionKeyMounted" -}}
{{- if and (include "kustos.extensionEnabled" .) .Values.expiry.extension.existingSecret }}true{{ end }}
{{- end }}

{{/*
The Secrets Kustos creates for itself in the release namespace (once, if absent), as a JSON list
of names: the Role lets it create Secrets there and read only these.
*/}}
{{- define "kustos.ownSecrets" -}}
{{- $out := list }}
{{- if and .Values.cleaner.enabled (not .Values.cleaner.authorKey.existingSecret) }}
{{- $out = append $out (include "kustos.cleanerAuthorSecretName" .) }}
{{- end }}
{{- if and (include "kustos.extensionEnabled" .) (not .Values.expiry.extension.existingSecret) }}
{{- $out = append $out (include "kustos.extensionSecretName" .) }}
{{- end }}
{{- if include "kustos.webhookSelfCert" . }}
{{- $out = append $out (include "kustos.webhookSecretName" .) }}
{{- end }}
{{- $out | toJson }}
{{- end }}

{{/*
Owner mail with a password Secret / a templates ConfigMap: "true" or "".
*/}}
{{- define "kustos.mailPasswordEnabled" -}}
{{- if and (include "kustos.notifyEnabled" .) .Values.expiry.notify.mail.host .Values.expiry.notify.mail.passwordSecret }}true{{ end }}
{{- end }}

{{- define "kustos.mailTemplatesEnabled" -}}
{{- if and (include "kustos.notifyEnabled" .) .Values.expiry.notify.mail.host .Values.expiry.notify.mail.templatesConfigMap }}true{{ end }}
{{- end }}

{{/*
The inactivity detector's sources file (--inactivity-config): inactivity.sources as a YAML list,
the format activity.LoadConfig reads. The queries' {{.Window}}, {{.Step}} and {{.Range}} are
plain strings in the values, which Helm does not evaluate: they reach the file as written.
*/}}
{{- define "kustos.inactivitySources" -}}
{{- toYaml .Values.inactivity.sources }}
{{- end }}

{{/*
The inactivity detector's template kind as an RBAC rule's API group: "" for the core group
(version/Kind), else the group of group/version/Kind.
*/}}
{{- define "kustos.inactivityTemplateGroup" -}}
{{- $parts := splitList "/" .Values.inactivity.templateKind }}
{{- if eq (len $parts) 3 }}{{ index $parts 0 }}{{ end }}
{{- end }}

{{/*
A kind's group/resource as --allow and the deletion and pause values write it: "apps/deployments",
"namespaces" for the core group.
*/}}
{{- define "kustos.groupResource" -}}
{{- if .apiGroup }}{{ .apiGroup }}/{{ end }}{{ .resource }}
{{- end }}

{{/*
Checks that each entry of kinds (a deletion or pause value, named by value) is one of known (a
detector's kinds, named by knownValue), and returns "detector:verb:group/resource" entries as a
JSON list.
*/}}
{{- define "kustos.allowEntries" -}}
{{- $known := list }}
{{- range .known }}{{ $known = append $known (include "kustos.groupResource" .) }}{{ end }}
{{- $out := list }}
{{- range .kinds }}
{{- if not (has . $known) }}
{{- fail (printf "\n\n%s: %q is none of %s (%s); write apiGroup/resource, e.g. apps/deployments." $.value . $.knownValue (join ", " $known)) }}
{{- end }}
{{- $out = append $out (printf "%s:%s:%s" $.detector $.verb .) }}
{{- end }}
{{- $out | toJson }}
{{- end }}

{{/*
What each detector may delete and pause in the cluster (--allow), as a JSON list of
"detector:verb:group/resource": nothing in observe mode; otherwise expiry.deletion,
expiry.pause, inactivity.deletion, inactivity.pause (each entry checked against the detector's
kinds), the helm uninstalls of expiry.helmReleases.uninstall and cleaner.helmReleases.uninstall
(helm.sh/releases), and for Cleaners their target kinds and the Cleaners themselves once their
cleanup is done. The ClusterRole grants delete and pause rights on exactly these.
*/}}
{{- define "kustos.allow" -}}
{{- $out := list }}
{{- if ne (toString .Values.mode) "observe" }}
{{- if .Values.expiry.enabled }}
{{- if .Values.expiry.deletion.namespaces }}
{{- $out = append $out "expiry:delete:namespaces" }}
{{- end }}
{{- $out = concat $out (include "kustos.allowEntries" (dict "detector" "expiry" "verb" "delete" "kinds" .Values.expiry.deletion.kinds "value" "expiry.deletion.kinds" "known" .Values.expiry.lifecycleKinds "knownValue" "expiry.lifecycleKinds") | fromJsonArray) }}
{{- $out = concat $out (include "kustos.allowEntries" (dict "detector" "expiry" "verb" "pause" "kinds" .Values.expiry.pause.kinds "value" "expiry.pause.kinds" "known" .Values.expiry.lifecycleKinds "knownValue" "expiry.lifecycleKinds") | fromJsonArray) }}
{{- if and .Values.expiry.helmReleases.enabled .Values.expiry.helmReleases.uninstall }}
{{- $out = append $out "expiry:delete:helm.sh/releases" }}
{{- end }}
{{- end }}
{{- if and .Values.vsphere.enabled .Values.vsphere.quarantine }}
{{- $out = append $out "expiry:delete:vsphere.kustos.io/virtualmachines" }}
{{- end }}
{{- if .Values.inactivity.enabled }}
{{- $out = concat $out (include "kustos.allowEntries" (dict "detector" "inactivity" "verb" "delete" "kinds" .Values.inactivity.deletion.kinds "value" "inactivity.deletion.kinds" "known" .Values.inactivity.kinds "knownValue" "inactivity.kinds") | fromJsonArray) }}
{{- $out = concat $out (include "kustos.allowEntries" (dict "detector" "inactivity" "verb" "pause" "kinds" .Values.inactivity.pause.kinds "value" "inactivity.pause.kinds" "known" .Values.inactivity.kinds "knownValue" "inactivity.kinds") | fromJsonArray) }}
{{- end }}
{{- if .Values.cleaner.enabled }}
{{- $out = append $out "cleaner:delete:kustos.io/cleaners" }}
{{- range .Values.cleaner.targetKinds }}
{{- $group := .apiGroup }}
{{- range .resources }}
{{- $out = append $out (printf "cleaner:delete:%s" (include "kustos.groupResource" (dict "apiGroup" $group "resource" .))) }}
{{- end }}
{{- end }}
{{- if .Values.cleaner.helmReleases.uninstall }}
{{- $out = append $out "cleaner:delete:helm.sh/releases" }}
{{- end }}
{{- end }}
{{- end }}
{{- $out | uniq | toJson }}
{{- end }}

{{/*
The resources --allow lets any detector verb ("delete" or "pause") that live in the cluster, as a
JSON list of {apiGroup, resource}, sorted: the ClusterRole's delete or pause rules. VMs live in
vSphere and helm releases are the Secrets of expiry.helmReleases and cleaner.helmReleases: no
rule of their own.
*/}}
{{- define "kustos.allowedResources" -}}
{{- $seen := list }}
{{- range include "kustos.allow" .root | fromJsonArray }}
{{- $parts := splitList ":" . }}
{{- $res := index $parts 2 }}
{{- if and (eq (index $parts 1) $.verb) (not (hasPrefix "vsphere.kustos.io/" $res)) (not (hasPrefix "helm.sh/" $res)) }}
{{- $seen = append $seen $res }}
{{- end }}
{{- end }}
{{- $out := list }}
{{- range $seen | uniq | sortAlpha }}
{{- $parts := splitList "/" . }}
{{- if eq (len $parts) 2 }}
{{- $out = append $out (dict "apiGroup" (index $parts 0) "resource" (index $parts 1)) }}
{{- else }}
{{- $out = append $out (dict "apiGroup" "" "resource" .) }}
{{- end }}
{{- end }}
{{- $out | toJson }}
{{- end }}

{{/*
The Prometheus URL Kustos asks (--prometheus-url), for the inactivity detector's sources and the
quota detector's usage windows: prometheus.url, else the older inactivity.prometheusURL; "" for
none. Both set and different is refused: one of them would be ignored without a word.
*/}}
{{- define "kustos.prometheusURL" -}}
{{- $new := .Values.prometheus.url -}}
{{- $old := .Values.inactivity.prometheusURL -}}
{{- if and $new $old (ne $new $old) -}}
{{- fail (printf "\n\nprometheus.url and inactivity.prometheusURL differ (%q, %q): Kustos asks one Prometheus; set prometheus.url only." $new $old) -}}
{{- end -}}
{{- $new | default $old -}}
{{- end }}

{{/*
How Prometheus is reached, as JSON: prometheus.auth when it sets a token or a CA, else the older
inactivity.prometheusAuth (whole blocks, never mixed: a key of one block never names a Secret
of the other).
*/}}
{{- define "kustos.prometheusAuth" -}}
{{- $a := .Values.prometheus.auth -}}
{{- if not (or $a.serviceAccountToken $a.bearerTokenSecret $a.caConfigMap) -}}
{{- $a = .Values.inactivity.prometheusAuth -}}
{{- end -}}
{{- toJson $a -}}
{{- end }}
