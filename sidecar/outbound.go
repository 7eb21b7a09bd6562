package main

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/flowgate/flowgate/orchestrator/hmacsig"
)

// outboundSenders are the settings set whose POSTs OUTBOUND_HMAC_SECRET
// signs.
func (c *Config) outboundSenders() []string {
	var out []string
	for _, s := range []struct{ name, url string }{
		{"BUFFER_WEBHOOK_URL", c.Buffer.WebhookURL}, {"DLQ_ALERT_WEBHOOK", c.Buffer.DLQAlertWebhook},
		{"BOOKING_EVENTS_WEBHOOK", c.Booking.EventsWebhook},
	} {
		if s.url != "" {
			out = append(out, s.name)
		}
	}
	return out
}

// inboundSecrets are the secrets flowgate verifies what it receives with,
// by setting: nothing flowgate sends is signed with one of them.
func (c *Config) inboundSecrets() map[string]string {
	return map[string]string{"HMAC_SECRET": c.HMACSecret, "BOOKING_AUTH_SECRET": c.BookingAuthSecret}
}

// validateOutbound requires OUTBOUND_HMAC_SECRET where something is signed
// with it and refuses one equal to an inbound secret. (A declared handler
// with sign: true and no secret of its own is reported by
// BUFFER_HANDLERS_FILE, which names OUTBOUND_HMAC_SECRET.)
//
// The rule: flowgate signs what it sends with OUTBOUND_HMAC_SECRET, never
// with a secret it verifies what it receives with: a receiver sees every
// POST (body and headers), and the buffer's enqueuer chooses the body, so a
// delivery signed with HMAC_SECRET could be replayed at flowgate's own
// signed routes (a captured handler delivery marked a task DONE at /ack).
func (c *Config) validateOutbound(p *problems) {
	if users := c.outboundSenders(); len(users) > 0 && c.OutboundSecret == "" {
		p.addf("OUTBOUND_HMAC_SECRET", "required with %s: flowgate signs what it sends with it, never with HMAC_SECRET (a receiver could replay a POST at flowgate); flowgate env prints a fresh one",
			strings.Join(users, ", "))
	}
	inbound := c.inboundSecrets()
	for _, name := range slices.Sorted(maps.Keys(inbound)) {
		if v := inbound[name]; v != "" && v == c.OutboundSecret {
			p.addf("OUTBOUND_HMAC_SECRET", "must differ from %s: flowgate accepts signatures made with %s, so a receiver of its POSTs could replay them at flowgate", name, name)
		}
	}
}

// outboundSender signs and posts flowgate's outgoing POSTs
// (webhook.forward, the DLQ alert, the booking events) with
// OUTBOUND_HMAC_SECRET; it never follows a redirect.
func (m *Main) outboundSender(client *http.Client) hmacsig.Sender {
	return hmacsig.Sender{Secret: []byte(m.Config.OutboundSecret), Client: client, Now: m.Now}
}
