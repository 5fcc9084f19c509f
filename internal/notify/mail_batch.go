package notify

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kustos-dev/kustos/internal/lifecycle"
)

// Defaults of BatchOptions.
const (
	DefaultBatchWindow  = time.Minute
	DefaultBatchMax     = 50
	DefaultBatchTimeout = 2 * time.Minute
)

// BatchSender sends several Notices to one recipient as one message (Mail does).
type BatchSender interface {
	SendBatch(ctx context.Context, ns []lifecycle.Notice) error
}

// BatchOptions configures NewBatcher.
type BatchOptions struct {
	// Window is how long the first Notice to a recipient waits for others to the same recipient;
	// default DefaultBatchWindow.
	Window time.Duration
	// Max is the most Notices in one message; a batch that reaches it goes at once. Default
	// DefaultBatchMax.
	Max int
	// Timeout bounds one delivery (one SendBatch call); default DefaultBatchTimeout.
	Timeout time.Duration
}

// ErrBatcherClosed: Send was called after Close.
var ErrBatcherClosed = errors.New("the mail batcher is closed")

// Batcher is a pipeline.Notifier that gathers the Notices to one recipient (Notice.To, case
// folded) for a window and sends them as one message. Send blocks until the message holding its
// Notice was delivered or failed, and returns that result, so the pipeline still records a
// Notice only once it went out. A Notice whose ID is already waiting joins it rather than being
// listed twice. A caller whose context ends stops waiting (with the context's error) and takes
// its Notice out of the batch if that has not started going out; the others are sent all the
// same. Notices without To are skipped (nil).
//
// Each waiting Notice is a blocked Send, so a batch holds at most as many Notices as there are
// concurrent callers (and at most Max).
type Batcher struct {
	s    BatchSender
	opts BatchOptions
	// base is the context of deliveries: no caller's, so that one caller giving up does not fail
	// the others' delivery; cancelled when Close gives up waiting.
	base       context.Context
	cancelBase context.CancelFunc

	mu      sync.Mutex
	open    map[string]*batch // by recipientKey; batches not yet going out
	closed  bool
	sending sync.WaitGroup
}

// batch is the Notices to one recipient in one window.
type batch struct {
	key     string
	entries []*batchEntry
	timer   *time.Timer
	sealed  bool          // going out: no more joins or withdrawals
	done    chan struct{} // closed when delivered or failed
	err     error         // valid once done is closed
}

type batchEntry struct {
	n       lifecycle.Notice
	waiters int
}

// NewBatcher returns a Batcher sending through s.
func NewBatcher(s BatchSender, opts BatchOptions) *Batcher {
	if opts.Window <= 0 {
		opts.Window = DefaultBatchWindow
	}
	if opts.Max <= 0 {
		opts.Max = DefaultBatchMax
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultBatchTimeout
	}
	base, cancel := context.WithCancel(context.Background())
	return &Batcher{s: s, opts: opts, open: map[string]*batch{}, base: base, cancelBase: cancel}
}

// Send adds n to its recipient's batch and waits until that batch was sent; it returns the
// batch's result, or ctx's error when ctx ends first.
func (b *Batcher) Send(ctx context.Context, n lifecycle.Notice) error {
	key := recipientKey(n.To)
	if key == "" {
		return nil
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrBatcherClosed
	}
	bt := b.open[key]
	if bt == nil {
		bt = &batch{key: key, done: make(chan struct{})}
		b.open[key] = bt
		bt.timer = time.AfterFunc(b.opts.Window, func() { b.flush(bt) })
	}
	var e *batchEntry
	for _, x := range bt.entries {
		if x.n.ID == n.ID {
			e = x
			break
		}
	}
	if e == nil {
		e = &batchEntry{n: n}
		bt.entries = append(bt.entries, e)
	}
	e.waiters++
	if len(bt.entries) >= b.opts.Max {
		b.sealLocked(bt)
	}
	b.mu.Unlock()

	select {
	case <-bt.done:
		return bt.err
	case <-ctx.Done():
	}
	select {
	case <-bt.done: // delivered at the same moment: that result is the true one
		return bt.err
	default:
	}
	b.mu.Lock()
	if !bt.sealed {
		b.withdrawLocked(bt, e)
	}
	b.mu.Unlock()
	return fmt.Errorf("mail to %s: waiting for its batch: %w", key, ctx.Err())
}

// withdrawLocked takes one waiter of e out of bt, e itself when it was the last, and bt when it
// is then empty.
func (b *Batcher) withdrawLocked(bt *batch, e *batchEntry) {
	e.waiters--
	if e.waiters > 0 {
		return
	}
	for i, x := range bt.entries {
		if x == e {
			bt.entries = append(bt.entries[:i], bt.entries[i+1:]...)
			break
		}
	}
	if len(bt.entries) == 0 {
		bt.timer.Stop()
		if b.open[bt.key] == bt {
			delete(b.open, bt.key)
		}
		bt.sealed = true // nobody waits: it never goes out, and nothing joins it any more
	}
}

// flush sends bt when its window is over, unless it went (or was emptied) before.
func (b *Batcher) flush(bt *batch) {
	b.mu.Lock()
	if bt.sealed {
		b.mu.Unlock()
		return
	}
	b.sealLocked(bt)
	b.mu.Unlock()
}

// sealLocked closes bt to joins and sends it in the background.
func (b *Batcher) sealLocked(bt *batch) {
	bt.sealed = true
	bt.timer.Stop()
	if b.open[bt.key] == bt {
		delete(b.open, bt.key)
	}
	ns := make([]lifecycle.Notice, len(bt.entries))
	for i, e := range bt.entries {
		ns[i] = e.n
	}
	b.sending.Add(1)
	go b.deliver(b.base, bt, ns)
}

// deliver sends ns, the notices of bt, and hands the result to bt's callers.
func (b *Batcher) deliver(ctx context.Context, bt *batch, ns []lifecycle.Notice) {
	defer b.sending.Done()
	ctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	bt.err = b.s.SendBatch(ctx, ns)
	close(bt.done)
}

// Close sends the batches still waiting for their window now and waits, until ctx ends, for
// every delivery under way; when ctx ends first, it cancels them. Send afterwards returns
// ErrBatcherClosed.
func (b *Batcher) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	for _, bt := range b.open {
		b.sealLocked(bt)
	}
	b.mu.Unlock()
	done := make(chan struct{})
	go func() {
		b.sending.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		b.cancelBase()
		return fmt.Errorf("mail batcher: deliveries still under way: %w", ctx.Err())
	}
}

// closeTimeout bounds Start's Close when the manager stops (within its graceful shutdown).
const closeTimeout = 5 * time.Second

// NeedLeaderElection is false: every replica's detectors send notices.
func (b *Batcher) NeedLeaderElection() bool { return false }

// Start makes the Batcher a manager's Runnable: when ctx ends it sends the mails still gathering
// (Close, within a few seconds) instead of dropping them; their senders are told, so nothing is
// recorded as sent that was not.
func (b *Batcher) Start(ctx context.Context) error {
	<-ctx.Done()
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	return b.Close(closeCtx)
}
