package pipeline

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-logr/logr"

	"github.com/kustos-dev/kustos/internal/lifecycle"
	"github.com/kustos-dev/kustos/internal/state"
)

// Confirmations make a merge stand on what the API server has, not on a cache: a group's
// proposal is merged from any one member's look, and each member's Change was decided by that
// member's own look, on its replica's caches of the target and of its Lease. After an API
// server restart, a cache comes back only after its watch's backoff; a look on it may find a
// target still due whose owner has just opted it out or extended it, and the proposal that
// removes it would be merged. So each look that finds its Key's proposal as it wants it
// (nothing to do but follow or merge it) records what it decided on: its target as it read it
// (lifecycle.Request.Seen) and its Lease's version. Before a merge, every target the merged
// commit changes is read again from the API server; one that is not as its last agreeing look
// read it keeps the merge waiting, until the cache has caught up and that target's own look
// has decided again (it withdraws, or agrees anew).
//
// What is remembered is this process's: after a restart, a target of an open proposal is
// unconfirmed until its first look, which comes with the caches' first sync.
type Confirmations struct {
	// Lease reads a Key's Lease from the API server, not a cache.
	Lease func(ctx context.Context, key lifecycle.Key) (state.Record, error)
	Log   logr.Logger

	mu sync.Mutex
	// targets read a detector's targets from the API server (Register).
	targets map[string]TargetReader
	// agreed is what the last agreeing look of each Key in a proposal decided on.
	agreed map[lifecycle.Key]agreement
}

// TargetReader reads key's target from the API server the way the detector's look reads it from
// its cache and returns what the look puts into Request.Seen; ok is false when the target, or
// its namespace, is gone or being deleted (nothing is left to keep).
type TargetReader func(ctx context.Context, key lifecycle.Key) (seen string, ok bool, err error)

type agreement struct {
	seen, lease string
}

// Register says how detector's targets are read from the API server. A detector not registered
// has its Leases confirmed, not its targets (its looks leave Request.Seen empty).
func (c *Confirmations) Register(detector string, read TargetReader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.targets == nil {
		c.targets = map[string]TargetReader{}
	}
	c.targets[detector] = read
}

// agree records that a look at key, which read its target as seen and its Lease at version,
// agrees with the Key's proposal: its step follows or merges the proposal, or has just put the
// look's own Change into it. A look that is about to change the proposal (update, withdraw)
// records nothing, so that until a later look agrees, the last agreement stands and the API
// server's newer target or Lease keeps a merge waiting.
func (c *Confirmations) agree(key lifecycle.Key, seen, version string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.agreed == nil {
		c.agreed = map[lifecycle.Key]agreement{}
	}
	c.agreed[key] = agreement{seen: seen, lease: version}
}

// forget drops key, whose look ended without a proposal: only Keys in a proposal are kept.
func (c *Confirmations) forget(key lifecycle.Key) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.agreed, key)
}

// Unconfirmed returns the first of keys (the targets a commit about to be merged changes) whose
// target or Lease the API server has otherwise than its last agreeing look read them, or which
// no look of this process has agreed to; "" when every one is confirmed. A target gone from the
// API server (or being deleted) is confirmed: nothing of it is left to keep.
func (c *Confirmations) Unconfirmed(ctx context.Context, keys []lifecycle.Key) (lifecycle.Key, error) {
	for _, k := range keys {
		c.mu.Lock()
		a, agreed := c.agreed[k]
		p, _ := k.Parts()
		read := c.targets[p.Detector]
		c.mu.Unlock()
		seen, exists := "", true
		if read != nil {
			var err error
			if seen, exists, err = read(ctx, k); err != nil {
				return "", fmt.Errorf("reading %s: %w", k, err)
			}
		}
		if !exists {
			continue // gone, or going: nothing of it is left to keep (and no look of it comes)
		}
		if !agreed {
			c.Log.V(1).Info("merge waits: no look of this replica has agreed to this target's change yet", "target", string(k))
			return k, nil
		}
		if seen != a.seen {
			c.Log.V(1).Info("merge waits: the target changed since the look that agreed (its cache is behind the API server)", "target", string(k))
			return k, nil
		}
		rec, err := c.Lease(ctx, k)
		if err != nil {
			return "", fmt.Errorf("reading the lease of %s: %w", k, err)
		}
		if rec.Version != a.lease {
			c.Log.V(1).Info("merge waits: the lease moved since the look that agreed", "target", string(k), "read", a.lease, "live", rec.Version)
			return k, nil
		}
	}
	return "", nil
}
