// Package egress owns Kustos's requests to destinations a tenant names: an exam target's
// kustos.io/probe-url and a Cleaner's spec.cloudEventSink. Without it a tenant could make the
// controller pod ask, again and again, whatever its network reaches: the cloud's metadata
// service at 169.254.169.254, the API server, other tenants' services, a sidecar on loopback.
//
// It owns three things:
//
//   - Policy, the operator's --allowed-destinations (CIDRs and host names), parsed strictly;
//   - Guard, an http.Client whose dialer resolves the name itself and checks every address it
//     connects to (net.Dialer.Control, so a name that resolves differently a second time — DNS
//     rebinding — gains nothing): loopback, link-local, private (RFC 1918, 100.64.0.0/10,
//     fc00::/7), unspecified, multicast and reserved addresses, and IPv6 forms that embed
//     IPv4 (::ffff:a.b.c.d, NAT64 in every layout, ISATAP, 6to4) classified as the IPv4 address
//     they carry, are refused unless a CIDR of the policy allows them. It never goes through a
//     proxy from the environment (HTTP_PROXY: the proxy would connect, past the check) and
//     never follows a redirect (a destination could send Kustos anywhere). Only http and https;
//   - Failure and StatusClass, the class of a failure ("destination refused", "timeout", "HTTP
//     5xx") that may be shown to the tenant. The error text itself can carry internal
//     addresses, banners or a response body, so it goes to the operator's log only.
//
// A host name the policy allows ("broker.knative-eventing.svc.cluster.local", or a suffix
// ".svc.cluster.local") trusts that name's resolution as far as private addresses go: a
// Service's cluster IP is one. It never makes loopback, link-local (cloud metadata),
// unspecified, multicast or reserved addresses reachable; only a CIDR does. The cluster's
// service and pod networks are refused because, in every distribution we know, they lie in the
// private ranges; a cluster that gives them public addresses is not covered.
//
// Addresses the operator sets by flag (the notification webhook, Prometheus, GitHub) are not
// tenant input and do not go through here.
package egress
