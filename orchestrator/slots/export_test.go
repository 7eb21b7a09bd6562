package slots

// DecodedLists is how many decoded lists c keeps for Get and GetTier.
func DecodedLists(c *Cache) int {
	c.memoMu.Lock()
	defer c.memoMu.Unlock()
	return len(c.memo)
}
