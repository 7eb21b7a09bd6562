package slots

// DecodedLists is how many decoded lists c keeps for Get.
func DecodedLists(c *Cache) int {
	c.listsMu.Lock()
	defer c.listsMu.Unlock()
	return len(c.lists)
}
