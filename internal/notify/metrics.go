package notify

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// deliveries counts messages handed to a mail server or a webhook, by notifier (mail, webhook)
// and outcome (sent, failed), so that a mail server or webhook that stopped accepting shows
// before owners miss their warnings. A failed one is sent again at the pipeline's next look.
var deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "kustos_notifications_total",
	Help: "Messages handed to the mail server or the webhook, by notifier (mail, webhook) and outcome (sent, failed); a failed one is sent again at the next look.",
}, []string{"notifier", "outcome"})

func init() { ctrlmetrics.Registry.MustRegister(deliveries) }

// Notifier names, the notifier label's values.
const (
	notifierMail    = "mail"
	notifierWebhook = "webhook"
)

// initDeliveries makes a configured notifier's series exist at 0, so that an alert comparing
// failures with successes sees a notifier that never succeeded.
func initDeliveries(notifier string) {
	deliveries.WithLabelValues(notifier, "sent")
	deliveries.WithLabelValues(notifier, "failed")
}

// countDelivery counts one message's outcome.
func countDelivery(notifier string, err error) {
	outcome := "sent"
	if err != nil {
		outcome = "failed"
	}
	deliveries.WithLabelValues(notifier, outcome).Inc()
}
