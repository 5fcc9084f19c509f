package github

import (
	"context"
	"slices"
	"time"

	"github.com/go-logr/logr"
)

// WriteLog keeps the send times of the client's writes of the last hour across restarts
// (*state.WriteLog: a Lease in the state namespace). GitHub counts its 500 content-creating
// requests an hour per App installation, not per process: without the log, each restart (a
// crash, an upgrade, a new leader) would start with a whole hour's budget again, and a Kustos
// restarted a few times in an hour would meet GitHub's secondary limits.
type WriteLog interface {
	Load(ctx context.Context) ([]time.Time, error)
	Save(ctx context.Context, sent []time.Time) error
}

// KeepWriteLog adds the writes the log holds to the client's pacing, then saves the last hour's
// writes every interval while they change, and once more when ctx ends. It runs on the replica
// that writes to GitHub (the leader), from when it leads; it returns when ctx ends. A log that
// cannot be read is logged and the pacing goes on with what this process sent; a write that
// cannot be saved is tried again at the next interval. A crash loses at most interval's writes.
func (c *Client) KeepWriteLog(ctx context.Context, wl WriteLog, interval time.Duration, log logr.Logger) error {
	if c.pacer == nil || c.pacer.perHour == 0 {
		return nil // nothing paced by the hour: nothing to keep
	}
	if sent, err := wl.Load(ctx); err != nil {
		log.Error(err, "reading the log of the last hour's GitHub writes; pacing from this process's writes alone")
	} else {
		c.pacer.addEarlier(sent, c.clock.Now())
		log.Info("read the log of the last hour's GitHub writes", "writes", len(sent))
	}
	var saved []time.Time
	save := func(ctx context.Context) {
		sent := c.pacer.recent(c.clock.Now())
		if slices.EqualFunc(sent, saved, time.Time.Equal) {
			return
		}
		if err := wl.Save(ctx, sent); err != nil {
			log.Error(err, "saving the log of the last hour's GitHub writes; trying again", "in", interval.String())
			return
		}
		saved = sent
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// The last writes of this life: ctx is done, the save needs a context of its own.
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			save(sctx) //nolint:contextcheck // ctx is done
			cancel()
			return nil
		case <-t.C:
			save(ctx)
		}
	}
}
