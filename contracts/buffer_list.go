package contracts

// BufferMessageList answers GET /api/buffer/messages: one page of messages
// in one Asynq state, each with its error history (errors[]: attempt,
// code, message, timestamp). NextCursor is empty on the last page.
type BufferMessageList struct {
	State      string          `json:"state"`
	Items      []BufferMessage `json:"items"`
	NextCursor string          `json:"nextCursor,omitempty"`
}
