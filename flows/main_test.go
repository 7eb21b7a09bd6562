package flows_test

import (
	"time"
)

// testSecret is the HMAC secret of every test here (≥ 16 bytes, as flowgate
// requires).
const testSecret = "flows-test-secret-0123456789abcdef"

// fixedNow is the clock of the Code nodes and of the verifier in the
// offline tests: 2026-01-01T00:00:00Z.
var fixedNow = time.Unix(1767225600, 0)
