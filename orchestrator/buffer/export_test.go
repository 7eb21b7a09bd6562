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
func (b *Buffer) Credit() int64 { return b.depth.held() }

// CreditField is this instance's field in the credit hash.
func (b *Buffer) CreditField() string { return b.depth.instance }

// ShardOf is the shard a key or a client-chosen messageId falls in.
func (b *Buffer) ShardOf(key string) int { return b.shards.Of(key) }

// ShardTag is shard i's hash tag.
func (b *Buffer) ShardTag(i int) string { return b.shards.Tag(i) }

// ShardDepth is shard i's depth counter key and its limit.
func (b *Buffer) ShardDepth(i int) (string, int64) {
	return b.depth.gauges[i].key, b.depth.gauges[i].max
}
