package signature

import (
	"fmt"
	"strings"
)

// Mode is the authentication mode, set by WEBHOOK_AUTH.
type Mode string

// The modes.
const (
	ModeHMAC  Mode = "hmac"  // X-Timestamp + X-Signature, with replay protection
	ModeToken Mode = "token" // Authorization: Bearer <token>
	ModeNone  Mode = "none"  // no authentication; only when set explicitly
)

// ParseMode parses a WEBHOOK_AUTH value, ignoring case and surrounding
// space. An empty value means ModeHMAC, so "none" is never a default.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return ModeHMAC, nil
	case ModeHMAC, ModeToken, ModeNone:
		return m, nil
	}
	return "", fmt.Errorf("signature: unknown WEBHOOK_AUTH mode %q (want hmac, token or none)", s)
}

// Insecure reports whether the caller should log a warning at start because
// requests are not authenticated at all.
func (m Mode) Insecure() bool { return m == ModeNone }
