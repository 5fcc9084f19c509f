package orphans

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	detectvsphere "github.com/kustos-dev/kustos/internal/detect/vsphere"
)

// VSphere VMs are not objects `kustos status` can list: the controller's last crawl keeps its
// orphans in a Lease of the state namespace (not a state Lease of a Key: the lease sweeps leave
// it alone), which `kustos status --orphans` and the orphan digest read.
const (
	VMLease             = "kustos-vsphere-orphans"
	vmOrphansAnnotation = "kustos.io/vsphere-orphans"
	vmOrphansCount      = "kustos.io/vsphere-orphans-count"
	// maxVMOrphans bounds the kept list (an annotation of at most ~100 KiB).
	maxVMOrphans = 500
)

// SaveVMs replaces the kept VM orphans with orphans (the first maxVMOrphans; the count
// says how many there were). r must read from the API server (a manager's GetAPIReader): the
// manager's cache holds only the Leases labelled app.kubernetes.io/managed-by=kustos (the state
// Leases), so through it this Lease is never found, and every crawl after the first would fail
// to create it again.
func SaveVMs(ctx context.Context, r client.Reader, w client.Writer, namespace string, orphans []detectvsphere.Orphan) error {
	kept := orphans
	if len(kept) > maxVMOrphans {
		kept = kept[:maxVMOrphans]
	}
	for i := range kept {
		if len(kept[i].Problem) > 160 {
			kept[i].Problem = kept[i].Problem[:157] + "..."
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return err
	}
	want := map[string]string{vmOrphansAnnotation: string(b), vmOrphansCount: fmt.Sprint(len(orphans))}
	var l coordinationv1.Lease
	err = r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: VMLease}, &l)
	if apierrors.IsNotFound(err) {
		l = coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: VMLease, Annotations: want,
			Labels: map[string]string{"app.kubernetes.io/name": "kustos"}}}
		return w.Create(ctx, &l)
	}
	if err != nil {
		return err
	}
	if l.Annotations[vmOrphansAnnotation] == want[vmOrphansAnnotation] && l.Annotations[vmOrphansCount] == want[vmOrphansCount] {
		return nil
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	for k, v := range want {
		l.Annotations[k] = v
	}
	return w.Update(ctx, &l)
}

// VMs reads the VM orphans the controller's last crawl kept (none without the Lease:
// vSphere is not enabled, or has not been crawled yet).
func VMs(ctx context.Context, c client.Reader, namespace string, now time.Time) ([]Row, error) {
	if namespace == "" {
		return nil, nil
	}
	var l coordinationv1.Lease
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: VMLease}, &l)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the vSphere orphans (Lease %s/%s): %w", namespace, VMLease, err)
	}
	var orphans []detectvsphere.Orphan
	if err := json.Unmarshal([]byte(l.Annotations[vmOrphansAnnotation]), &orphans); err != nil {
		return nil, fmt.Errorf("the vSphere orphans in Lease %s/%s cannot be read (the next crawl rewrites them): %w", namespace, VMLease, err)
	}
	rows := make([]Row, 0, len(orphans))
	for _, o := range orphans {
		r := Row{Target: o.Target, Missing: o.Missing, Problem: o.Problem}
		if !o.Created.IsZero() {
			r.Age = age(o.Created, now)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// VMReport keeps the VM crawl's orphans (detectvsphere.OrphanReport) with SaveVMs. R reads the
// Lease from the API server: the manager's cache does not hold it.
type VMReport struct {
	R         client.Reader
	W         client.Writer
	Namespace string
}

var _ detectvsphere.OrphanReport = VMReport{}

// SetOrphans replaces the kept VM orphans.
func (v VMReport) SetOrphans(ctx context.Context, orphans []detectvsphere.Orphan) error {
	return SaveVMs(ctx, v.R, v.W, v.Namespace, orphans)
}
