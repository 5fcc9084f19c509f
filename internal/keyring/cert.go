package keyring

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CertLifetime is how long a generated CA and serving certificate are valid: they are never
// renewed (delete the Secret and restart Kustos for new ones), like the chart's were.
const CertLifetime = 10 * 365 * 24 * time.Hour

// ServingCert is a webhook's serving certificate and the CA that signed it (the caBundle).
type ServingCert struct {
	CA   []byte // PEM
	Cert tls.Certificate
}

// ServiceDNSNames are the names the API server may use for Service svc: name, name.namespace,
// name.namespace.svc and name.namespace.svc.cluster.local.
func ServiceDNSNames(svc types.NamespacedName) []string {
	n := svc.Name + "." + svc.Namespace
	return []string{svc.Name, n, n + ".svc", n + ".svc.cluster.local"}
}

// Serving returns the serving certificate in the Secret name (kubernetes.io/tls with ca.crt,
// tls.crt and tls.key), creating the Secret with a new CA and a certificate for dnsNames when
// it does not exist. A Secret that exists must hold a certificate valid now for every one of
// dnsNames, signed by its ca.crt; Kustos does not replace it (ErrUnusable says to delete it).
func Serving(ctx context.Context, c client.Client, name types.NamespacedName, dnsNames []string, now time.Time) (ServingCert, error) {
	data, err := ensure(ctx, c, name, corev1.SecretTypeTLS, func() (map[string][]byte, error) { return newServing(dnsNames, now) })
	if err != nil {
		return ServingCert{}, err
	}
	unusable := func(format string, args ...any) (ServingCert, error) {
		return ServingCert{}, fmt.Errorf("secret %s: %s (delete the Secret and restart Kustos to have a new one made): %w",
			name, fmt.Sprintf(format, args...), ErrUnusable)
	}
	pair, err := tls.X509KeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return unusable("tls.crt and tls.key: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return unusable("tls.crt: %v", err)
	}
	if now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
		return unusable("the certificate is valid from %s to %s", leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	for _, n := range dnsNames {
		if !slices.Contains(leaf.DNSNames, n) {
			return unusable("the certificate is for %v, not %s", leaf.DNSNames, n)
		}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data["ca.crt"]) {
		return unusable("ca.crt holds no PEM certificate")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return unusable("ca.crt did not sign tls.crt: %v", err)
	}
	pair.Leaf = leaf
	return ServingCert{CA: data["ca.crt"], Cert: pair}, nil
}

// newServing makes a CA and a serving certificate for dnsNames signed by it, as a
// kubernetes.io/tls Secret's data.
func newServing(dnsNames []string, now time.Time) (map[string][]byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	start, end := now.Add(-time.Hour), now.Add(CertLifetime) // an hour of clock skew
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: dnsNames[0] + "-ca"},
		NotBefore: start, NotAfter: end, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: dnsNames[len(dnsNames)-1]}, DNSNames: dnsNames,
		NotBefore: start, NotAfter: end, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		"ca.crt":                pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}
