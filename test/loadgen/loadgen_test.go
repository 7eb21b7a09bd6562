package loadgen_test

import (
	"fmt"
	"net"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/flowgate/flowgate/test/loadgen"
)

func TestRunCountsAndChecks(t *testing.T) {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/n/:i", func(c *fiber.Ctx) error {
		if c.Params("i") == "7" {
			return c.SendStatus(500)
		}
		return c.SendString(c.Params("i"))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	defer func() { _ = app.Shutdown() }()
	for _, client := range []bool{false, true} { // the wire client (Linux) and fasthttp's
		res := loadgen.Run(loadgen.Config{Client: client,
			Addr: ln.Addr().String(), Conns: 4, Requests: 200,
			Build: func(i int, req *fasthttp.Request) { req.SetRequestURI(fmt.Sprintf("http://%s/n/%d", ln.Addr(), i)) },
			Check: func(i int, resp *fasthttp.Response) error {
				if resp.StatusCode() != 200 || string(resp.Body()) != fmt.Sprint(i) {
					return fmt.Errorf("request %d: %d %q", i, resp.StatusCode(), resp.Body())
				}
				return nil
			},
		})
		if res.Requests != 200 || res.Failures != 1 || res.FirstError == nil || res.P99 < res.P50 || res.PerSecond() <= 0 {
			t.Fatalf("client %v: unexpected result: %+v", client, res)
		}
	}
}

// A server that goes away fails every request with the reason, not a hang.
func TestRunReportsAClosedServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	defer ln.Close()
	res := loadgen.Run(loadgen.Config{Addr: ln.Addr().String(), Conns: 2, Requests: 10,
		Build: func(_ int, req *fasthttp.Request) { req.SetRequestURI("http://" + ln.Addr().String() + "/") }})
	if res.Failures != 10 || res.FirstError == nil {
		t.Fatalf("unexpected result: %+v", res)
	}
}
