// Package pipelinetest holds test doubles of the change pipeline's dependencies that more than
// one package's tests use. MemStore is the Lease store's contract in memory.
package pipelinetest

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// MemStore is the contract of the Lease store (internal/state) in memory: one Record per Key
// with a Version, every write conditional on the Version read (as the Lease store's Update with
// a resourceVersion is: a stale write is a Conflict). Several replicas share one MemStore
// through As. FailNext makes a write fail before it lands (a crash).
type MemStore struct {
	mu       sync.Mutex
	recs     map[lifecycle.Key]state.Record
	version  int
	failNext map[string]error
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore {
	return &MemStore{recs: map[lifecycle.Key]state.Record{}, failNext: map[string]error{}}
}

// As returns the store as the replica identity uses it (it names itself in pending decisions).
func (m *MemStore) As(identity string) *ReplicaStore { return &ReplicaStore{m: m, identity: identity} }

// Record returns the stored record of key (an empty one for a key never written).
func (m *MemStore) Record(key lifecycle.Key) state.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.recs[key]; ok {
		return r
	}
	return state.Record{Key: key}
}

// Put stores rec as it is (a hand-edited Lease).
func (m *MemStore) Put(rec state.Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs[rec.Key] = rec
}

// FailNext makes the next write of operation op (the ReplicaStore method's name) fail with err.
func (m *MemStore) FailNext(op string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failNext[op] = err
}

// Count counts the records for which match holds.
func (m *MemStore) Count(match func(state.Record) bool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.recs {
		if match(r) {
			n++
		}
	}
	return n
}

var leaseGR = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func (m *MemStore) write(op string, rec state.Record, mutate func(*state.Record)) (state.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.failNext[op]; err != nil {
		delete(m.failNext, op)
		return rec, err
	}
	cur, ok := m.recs[rec.Key]
	if ok && cur.Version != rec.Version || !ok && rec.Version != "" {
		return rec, apierrors.NewConflict(leaseGR, string(rec.Key), errors.New("the object has been modified"))
	}
	next := rec
	mutate(&next)
	m.version++
	next.Version = strconv.Itoa(m.version)
	m.recs[rec.Key] = next
	return next, nil
}

// ReplicaStore is one replica's view of a MemStore; it implements pipeline.Store.
type ReplicaStore struct {
	m        *MemStore
	identity string
}

// Get returns the stored record of key.
func (s *ReplicaStore) Get(_ context.Context, key lifecycle.Key) (state.Record, error) {
	return s.m.Record(key), nil
}

// MarkModified records a decision at t, pending by this replica.
func (s *ReplicaStore) MarkModified(_ context.Context, rec state.Record, t time.Time, pending string) (state.Record, error) {
	return s.m.write("MarkModified", rec, func(r *state.Record) {
		r.LastModified, r.Pending, r.PendingBy, r.PendingSince, r.Queued = t, pending, s.identity, t, ""
		if pending == "" {
			r.PendingBy, r.PendingSince = "", time.Time{}
		}
	})
}

// TakePending makes this replica the one carrying out the pending decision; it keeps its time.
func (s *ReplicaStore) TakePending(_ context.Context, rec state.Record) (state.Record, error) {
	return s.m.write("TakePending", rec, func(r *state.Record) { r.PendingBy = s.identity })
}

// ClearPending marks the pending decision as carried out.
func (s *ReplicaStore) ClearPending(_ context.Context, rec state.Record) (state.Record, error) {
	return s.m.write("ClearPending", rec, func(r *state.Record) { clearPending(r) })
}

// Lock names the open proposal and the head Kustos wrote; it clears the pending decision.
func (s *ReplicaStore) Lock(_ context.Context, rec state.Record, holder, proposed, head string) (state.Record, error) {
	return s.m.write("Lock", rec, func(r *state.Record) {
		r.Holder, r.Proposed, r.Head = holder, proposed, head
		clearPending(r)
	})
}

// Unlock forgets the proposal, sets last-modified to t and remembers closed (or forgets it).
func (s *ReplicaStore) Unlock(_ context.Context, rec state.Record, t time.Time, closed string) (state.Record, error) {
	return s.m.write("Unlock", rec, func(r *state.Record) {
		r.Holder, r.Proposed, r.Head, r.LastModified, r.ClosedValues = "", "", "", t, closed
		clearPending(r)
	})
}

// SetBag replaces the detector state, within the Lease store's bounds.
func (s *ReplicaStore) SetBag(_ context.Context, rec state.Record, bag map[string]string) (state.Record, error) {
	if err := state.CheckBag(bag); err != nil {
		return rec, err
	}
	return s.m.write("SetBag", rec, func(r *state.Record) { r.Bag = bag })
}

// SetQueued records why the pending decision waits to be proposed.
func (s *ReplicaStore) SetQueued(_ context.Context, rec state.Record, why string) (state.Record, error) {
	return s.m.write("SetQueued", rec, func(r *state.Record) { r.Queued = why })
}

// SetStep records the progress of a step before the pending decision.
func (s *ReplicaStore) SetStep(_ context.Context, rec state.Record, step, value string) (state.Record, error) {
	return s.m.write("SetStep", rec, func(r *state.Record) {
		steps := make(map[string]string, len(r.Steps)+1)
		for k, v := range r.Steps {
			steps[k] = v
		}
		steps[step] = value
		if value == "" {
			delete(steps, step)
		}
		if len(steps) == 0 {
			steps = nil
		}
		r.Steps = steps
	})
}

func clearPending(r *state.Record) {
	r.Pending, r.PendingBy, r.PendingSince, r.Queued = "", "", time.Time{}, ""
}
