package bufferhttp_test

import "regexp"

// regexpWorker matches the hostname:pid worker id.
var regexpWorker = regexp.MustCompile(`^[^:\s]+:\d+$`)
