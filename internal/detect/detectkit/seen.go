package detectkit

import (
	"encoding/hex"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// ReadMetadata is the part of o's metadata a detector that watches w decides on: every label w
// names and every annotation with one of w's prefixes.
func ReadMetadata(w lifecycle.Watches, o client.Object) (labels, annotations map[string]string) {
	labels, annotations = map[string]string{}, map[string]string{}
	for _, k := range w.MetadataLabels {
		if v, ok := o.GetLabels()[k]; ok {
			labels[k] = v
		}
	}
	for k, v := range o.GetAnnotations() {
		for _, p := range w.MetadataAnnotationPrefixes {
			if strings.HasPrefix(k, p) {
				annotations[k] = v
				break
			}
		}
	}
	return labels, annotations
}

// Seen is what a look read of its objects (the target, then its Namespace; nil for none), as a
// detector watching w decides on them: their UIDs, whether they are being deleted, and
// ReadMetadata. It goes into lifecycle.Request.Seen. Before a merge, the same objects read from
// the API server must give the same Seen, or the look decided on a cache that was behind.
// Changes the detector does not read (a status, a rollout's revision annotation) leave it
// alone, so they never hold a merge back.
func Seen(w lifecycle.Watches, objs ...client.Object) string {
	var b strings.Builder
	for _, o := range objs {
		b.WriteString("\x00object\x00")
		if o == nil {
			continue
		}
		b.WriteString(string(o.GetUID()))
		if o.GetDeletionTimestamp() != nil {
			b.WriteString("\x00deleting")
		}
		labels, annotations := ReadMetadata(w, o)
		writeSorted(&b, "\x00labels", labels)
		writeSorted(&b, "\x00annotations", annotations)
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(b.String()))
	return hex.EncodeToString(h.Sum(nil))
}

func writeSorted(b *strings.Builder, what string, m map[string]string) {
	b.WriteString(what)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// Label and annotation keys hold no NUL; values may hold anything, so their lengths
		// are written too and no two maps write the same bytes.
		b.WriteString("\x00" + k + "\x00" + strconv.Itoa(len(m[k])) + ":" + m[k])
	}
}
