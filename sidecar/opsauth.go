package main

import (
	"crypto/subtle"
	"encoding/base64"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/basicauth"

	"github.com/flowgate/flowgate/contracts"
)

// monitoringCheck is the monitoring credentials' check (user and password
// compared in constant time), or nil when none are configured: the
// embedded trial without MONITORING_USER, or MONITORING_AUTH=none.
func (m *Main) monitoringCheck() func(user, pass string) bool {
	if m.Config.MonitoringAuth == "none" || m.Config.MonitoringUser == "" {
		return nil
	}
	user, pass := []byte(m.Config.MonitoringUser), []byte(m.Config.MonitoringPass)
	return func(u, p string) bool {
		okU := subtle.ConstantTimeCompare([]byte(u), user)
		okP := subtle.ConstantTimeCompare([]byte(p), pass)
		return okU&okP == 1
	}
}

// opsAuth is the monitoring credentials' basic auth, shared by /monitoring
// and the operation endpoints (redisGet/Set/Delete, the slot cache's):
// with MONITORING_AUTH=basic and MONITORING_USER set, a request without
// the right user and password (compared in constant time) is refused 401
// with the flowgate error envelope. Without credentials (the embedded
// trial, or MONITORING_AUTH=none on purpose, warned at start) it lets
// every request through, exactly as /monitoring always did.
func (m *Main) opsAuth() fiber.Handler {
	check := m.monitoringCheck()
	if check == nil {
		return func(c *fiber.Ctx) error { return c.Next() }
	}
	return basicauth.New(basicauth.Config{
		Realm:      "flowgate monitoring",
		Authorizer: check,
		Unauthorized: func(c *fiber.Ctx) error {
			c.Set(fiber.HeaderWWWAuthenticate, `Basic realm="flowgate monitoring"`)
			return contracts.Errorf(contracts.CodeUnauthorized, "monitoring credentials required")
		},
	})
}

// operator reports whether a request carries the monitoring credentials
// (opsAuth's check on its basic auth) without refusing any: queue-status
// shows such a request the whole queue with names, any other its own
// operations only. With no credentials configured (the embedded trial,
// MONITORING_AUTH=none) no request is the operator's — queue-status lives
// on the public Node-RED path, which the switch-over kit forwards from
// Node-RED's own unauthenticated port, while the whole queue stays in
// Asynqmon at /monitoring (open in that mode, and not forwarded).
func (m *Main) operator() func(c *fiber.Ctx) bool {
	check := m.monitoringCheck()
	return func(c *fiber.Ctx) bool {
		if check == nil {
			return false
		}
		user, pass, ok := basicCredentials(c.Get(fiber.HeaderAuthorization))
		return ok && check(user, pass)
	}
}

// basicCredentials parses an Authorization header of the Basic scheme
// (RFC 7617) as fiber's basicauth middleware does.
func basicCredentials(h string) (user, pass string, ok bool) {
	const prefix = "basic "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(h[len(prefix):])
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(raw), ":")
}
