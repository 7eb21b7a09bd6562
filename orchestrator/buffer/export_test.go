package buffer

import "context"

// Test hooks for package buffer_test.

// ResyncDepth runs one depth reconcile now (what the loop does every
// DepthReconcile).
func (b *Buffer) ResyncDepth(ctx context.Context) error { return b.depth.resync(ctx) }

// FlushDepth runs one depth flush now (what the loop does every
// DepthRefresh).
func (b *Buffer) FlushDepth(ctx context.Context) error { return b.depth.flushLeft(ctx) }

// Credit is the place credit this instance holds locally.
func (b *Buffer) Credit() int64 { return b.depth.credit.n.Load() }

// CreditField is this instance's field in the credit hash.
func (b *Buffer) CreditField() string { return b.depth.instance }
