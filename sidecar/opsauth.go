package main

import (
	"crypto/subtle"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/basicauth"

	"github.com/flowgate/flowgate/contracts"
)

// opsAuth is the monitoring credentials' basic auth, shared by /monitoring
// and the operation endpoints (redisGet/Set/Delete, the slot cache's):
// with MONITORING_AUTH=basic and MONITORING_USER set, a request without
// the right user and password (compared in constant time) is refused 401
// with the flowgate error envelope. Without credentials (the embedded
// trial, or MONITORING_AUTH=none on purpose, warned at start) it lets
// every request through, exactly as /monitoring always did.
func (m *Main) opsAuth() fiber.Handler {
	if m.Config.MonitoringAuth == "none" || m.Config.MonitoringUser == "" {
		return func(c *fiber.Ctx) error { return c.Next() }
	}
	user, pass := []byte(m.Config.MonitoringUser), []byte(m.Config.MonitoringPass)
	return basicauth.New(basicauth.Config{
		Realm: "flowgate monitoring",
		Authorizer: func(u, p string) bool {
			okU := subtle.ConstantTimeCompare([]byte(u), user)
			okP := subtle.ConstantTimeCompare([]byte(p), pass)
			return okU&okP == 1
		},
		Unauthorized: func(c *fiber.Ctx) error {
			c.Set(fiber.HeaderWWWAuthenticate, `Basic realm="flowgate monitoring"`)
			return contracts.Errorf(contracts.CodeUnauthorized, "monitoring credentials required")
		},
	})
}
