package signature

import (
	"errors"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/orchestrator/valutil"
)

// DefaultTolerance is how far X-Timestamp may be from the server clock.
const DefaultTolerance = 300 * time.Second

// MinSecretLen is the shortest HMAC secret New accepts, in bytes.
const MinSecretLen = 16

// MinTolerance is the least clock skew an hmac-mode signature may allow.
const MinTolerance = time.Second

// Config configures a Verifier. The zero Mode means ModeHMAC.
type Config struct {
	Mode Mode

	// Secret is the HMAC key (ModeHMAC), at least MinSecretLen bytes.
	Secret []byte
	// Token is the bearer token (ModeToken).
	Token string
	// Tolerance is the accepted clock skew either way (ModeHMAC). Zero means
	// DefaultTolerance; otherwise it must be at least one second, the
	// resolution of X-Timestamp.
	Tolerance time.Duration
	// Replay remembers signatures (ModeHMAC, required). Use a
	// RedisReplayGuard so replays are caught across instances.
	Replay ReplayGuard
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MinVersion is the oldest signature version accepted (ModeHMAC): 1
	// (default) accepts the seed's timestamp.body scheme, which does not
	// cover the route; 2 requires method and path to be signed too.
	MinVersion int
}

func (c Config) withDefaults() Config {
	c.Mode = valutil.ValOrDefault(c.Mode, ModeHMAC)
	c.Tolerance = valutil.ValOrDefault(c.Tolerance, DefaultTolerance)
	c.Now = valutil.FuncOrDefault(c.Now, time.Now)
	c.MinVersion = valutil.ValOrDefault(c.MinVersion, DefaultMinVersion)
	return c
}

func (c Config) validate() error {
	switch c.Mode {
	case ModeHMAC:
		if len(c.Secret) < MinSecretLen {
			return fmt.Errorf("signature: hmac mode needs a secret of at least %d bytes", MinSecretLen)
		}
		if c.Tolerance < MinTolerance {
			return fmt.Errorf("signature: tolerance %s must be at least %s", c.Tolerance, MinTolerance)
		}
		if c.Replay == nil {
			return errors.New("signature: hmac mode needs a ReplayGuard")
		}
		if c.MinVersion != 1 && c.MinVersion != 2 {
			return fmt.Errorf("signature: MinVersion must be 1 or 2, got %d", c.MinVersion)
		}
	case ModeToken:
		if c.Token == "" {
			return errors.New("signature: token mode needs a token")
		}
	case ModeNone:
	default:
		return fmt.Errorf("signature: unknown mode %q", c.Mode)
	}
	return nil
}

// String describes c without its secret or token, so a logged Config
// leaks nothing.
func (c Config) String() string {
	return fmt.Sprintf("signature.Config{Mode:%s Secret:%s Token:%s Tolerance:%s}",
		c.Mode, redact(len(c.Secret) > 0), redact(c.Token != ""), c.Tolerance)
}

// GoString is String, for %#v.
func (c Config) GoString() string { return c.String() }

func redact(set bool) string {
	if set {
		return "[redacted]"
	}
	return `""`
}
