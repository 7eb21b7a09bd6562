package web

// DefaultBodyLimit is the largest request body (bytes) when
// Options.BodyLimit is zero; larger bodies answer 413.
const DefaultBodyLimit = 1 << 20
