{{/*
Whether the Cleaner admission webhook is served and registered: webhook.enabled, and only with
the Cleaner detector (cleaner.enabled). "true" or empty.
*/}}
{{- define "kustos.webhookEnabled" -}}
{{- if and .Values.cleaner.enabled .Values.webhook.enabled }}true{{ end }}
{{- end }}

{{/*
Name of the Service in front of the webhook server; the serving certificate is for its DNS names.
*/}}
{{- define "kustos.webhookServiceName" -}}
{{- printf "%s-webhook" (include "kustos.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Name of the Secret holding ca.crt, tls.crt and tls.key: the one Kustos creates (once, at its
first start: --webhook-cert-secret), or cert-manager's.
*/}}
{{- define "kustos.webhookSecretName" -}}
{{- if .Values.webhook.certManager.enabled }}
{{- printf "%s-webhook-cert" (include "kustos.fullname" .) | trunc 253 }}
{{- else }}
{{- printf "%s-webhook-tls" (include "kustos.fullname" .) | trunc 253 }}
{{- end }}
{{- end }}

{{/*
Where the container reads the serving certificate (--webhook-cert-dir): controller-runtime's
default directory.
*/}}
{{- define "kustos.webhookCertDir" -}}
/tmp/k8s-webhook-server/serving-certs
{{- end }}

{{/*
The DNS names the API server may use for the webhook Service, as a list.
*/}}
{{- define "kustos.webhookDNSNames" -}}
{{- $svc := include "kustos.webhookServiceName" . }}
{{- $ns := .Release.Namespace }}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) | toJson }}
{{- end }}

{{/*
Names of the webhook configurations, whose caBundle Kustos fills in without cert-manager.
*/}}
{{- define "kustos.webhookConfigurationNames" -}}
{{- list (printf "%s-cleaners" (include "kustos.fullname" .)) (printf "%s-cleaner-authors" (include "kustos.fullname" .)) | toJson }}
{{- end }}

{{/*
The webhook's certificate is Kustos's own (not cert-manager's): "true" or "".
*/}}
{{- define "kustos.webhookSelfCert" -}}
{{- if and (include "kustos.webhookEnabled" .) (not .Values.webhook.certManager.enabled) }}true{{ end }}
{{- end }}
