package main

import (
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
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
//
// Before the credentials, a browser's cross-origin write is refused
// (sameOriginWrites): a browser resends cached basic credentials with any
// request, so without it a page an operator visits could pause queues or
// delete keys through their browser.
func (m *Main) opsAuth() fiber.Handler {
	check := m.monitoringCheck()
	if check == nil {
		return sameOriginWrites()
	}
	auth := basicauth.New(basicauth.Config{
		Realm:      "flowgate monitoring",
		Authorizer: check,
		Unauthorized: func(c *fiber.Ctx) error {
			c.Set(fiber.HeaderWWWAuthenticate, `Basic realm="flowgate monitoring"`)
			return contracts.Errorf(contracts.CodeUnauthorized, "monitoring credentials required")
		},
	})
	return func(c *fiber.Ctx) error {
		if err := crossOrigin(c); err != nil {
			return err
		}
		return auth(c)
	}
}

// sameOriginWrites is crossOrigin as a middleware.
func sameOriginWrites() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := crossOrigin(c); err != nil {
			return err
		}
		return c.Next()
	}
}

// crossOriginCheck is net/http's CSRF protection (Go 1.25): a request of
// an unsafe method whose Sec-Fetch-Site is neither same-origin nor none,
// or, without it, whose Origin's host is not the request's Host, is a
// browser's cross-origin request. Requests with neither header (curl,
// Node-RED calling the ops routes, Prometheus) pass.
var crossOriginCheck = http.NewCrossOriginProtection()

// crossOrigin refuses a browser's cross-origin write 403 forbidden
// (crossOriginCheck), with details.reason cross_origin.
func crossOrigin(c *fiber.Ctx) error {
	r := &http.Request{Method: c.Method(), Host: string(c.Request().Host()), Header: http.Header{},
		URL: &url.URL{Path: c.Path()}}
	for _, name := range []string{"Sec-Fetch-Site", fiber.HeaderOrigin} {
		if v := c.Get(name); v != "" {
			r.Header.Set(name, v)
		}
	}
	if err := crossOriginCheck.Check(r); err != nil {
		e := contracts.Errorf(contracts.CodeForbidden, "a browser's cross-origin request to an operator route is refused (%v)", err)
		e.Details = map[string]any{"reason": "cross_origin"}
		return e
	}
	return nil
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
