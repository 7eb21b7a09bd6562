package shadowhttp

import (
	"bytes"
	_ "embed" // page.html
	"fmt"
	"html/template"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/flowgate/flowgate/contracts"
)

//go:embed page.html
var pageHTML string

var page = template.Must(template.New("switch-over").Funcs(template.FuncMap{
	"join": func(s []string) string { return strings.Join(s, ", ") },
	"lat": func(l map[string]contracts.ShadowLatency, side string) string {
		v, ok := l[side]
		if !ok {
			return "–"
		}
		return fmt.Sprintf("%.1f / %.1f", v.P50, v.P99)
	},
	"fields": func(f map[string]int64) string {
		keys := make([]string, 0, len(f))
		for k := range f {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s %d", k, f[k])
		}
		return strings.Join(parts, ", ")
	},
}).Parse(pageHTML))

// Page answers the report as HTML.
func (h *Handlers) Page(c *fiber.Ctx) error {
	rep, err := h.report(c.UserContext())
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := page.Execute(&buf, rep); err != nil {
		return fmt.Errorf("shadow page: %w", err)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(buf.Bytes())
}
