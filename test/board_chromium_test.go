package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/holds/holdstream"
	"github.com/flowgate/flowgate/orchestrator/holds/holdstream/board"
	"github.com/flowgate/flowgate/sidecar/web"
	"github.com/flowgate/flowgate/test/redistest"
)

// boardEngine stands in for the holds engine and the availability
// endpoints until they are merged: it serves the exact timeslots shape of
// HOLDS-CONTRACT.md and POST /v1/holds, which stores the hold and publishes
// the engine's JSON event on the type's channel, as the engine does.
type boardEngine struct {
	mu     sync.Mutex
	holds  []holdstream.Hold
	rdb    redis.UniversalClient
	prefix string
}

func (b *boardEngine) Active(_ context.Context, typeID string) ([]holdstream.Hold, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []holdstream.Hold
	for _, h := range b.holds {
		if h.AppointmentTypeID == typeID {
			out = append(out, h)
		}
	}
	return out, nil
}

var boardDay = time.Date(2026, 11, 24, 15, 0, 0, 0, time.UTC) // 09:00 America/Chicago (CST)

// timeslots: 09:00–11:30 every 30 min, three specialists; spec3 is not
// working at 09:00; spec1 at 10:00 is already held by someone.
func (b *boardEngine) timeslots(c *fiber.Ctx) error {
	type slot struct {
		Start time.Time `json:"slotStartDate"`
		End   time.Time `json:"slotEndDate"`
		Free  []string  `json:"specialistIds"`
		Held  []string  `json:"heldSpecialistIds"`
	}
	var slots []slot
	for i := range 6 {
		start := boardDay.Add(time.Duration(i) * 30 * time.Minute)
		s := slot{Start: start, End: start.Add(30 * time.Minute), Free: []string{"spec1", "spec2", "spec3"}, Held: []string{}}
		if i == 0 {
			s.Free = []string{"spec1", "spec2"}
		}
		if i == 2 {
			s.Free, s.Held = []string{"spec2", "spec3"}, []string{"spec1"}
		}
		slots = append(slots, s)
	}
	return c.JSON(fiber.Map{"appointmentTypeId": c.Params("id"), "timeZone": "America/Chicago", "from": c.Query("from"), "days": 1,
		"specialists": []fiber.Map{{"id": "spec1", "name": "Dr. Ada", "priority": 2}, {"id": "spec2", "name": "Dr. Bo", "priority": 1}, {"id": "spec3", "name": "Dr. Cy", "priority": 1}},
		"slots":       slots})
}

// createHold is POST /v1/holds (issue 11's body and answer).
func (b *boardEngine) createHold(c *fiber.Ctx) error {
	var req struct {
		AppointmentTypeID string    `json:"appointmentTypeId"`
		SlotStartDate     time.Time `json:"slotStartDate"`
		ClientID          string    `json:"clientId"`
		SpecialistID      string    `json:"specialistId"`
	}
	if err := json.Unmarshal(c.Body(), &req); err != nil {
		return fiber.NewError(fiber.StatusBadRequest, err.Error())
	}
	h := holdstream.Hold{HoldID: fmt.Sprintf("hold-%d", time.Now().UnixNano()), ClientID: req.ClientID, AppointmentTypeID: req.AppointmentTypeID,
		SpecialistID: req.SpecialistID, SlotStartDate: req.SlotStartDate, SlotEndDate: req.SlotStartDate.Add(30 * time.Minute),
		HoldExpiresAt: time.Now().Add(30 * time.Second).UTC(), Face: "web"}
	b.mu.Lock()
	b.holds = append(b.holds, h)
	b.mu.Unlock()
	ev, _ := json.Marshal(holdstream.Event{Type: holdstream.TypeHold, Hold: h})
	if err := b.rdb.Publish(c.UserContext(), b.prefix+"holds:events:"+h.AppointmentTypeID, ev).Err(); err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"holdId": h.HoldID, "specialistId": h.SpecialistID,
		"slotStartDate": h.SlotStartDate, "slotEndDate": h.SlotEndDate, "holdExpiresAt": h.HoldExpiresAt})
}

// boardServer serves /board, /v1/holds/stream (the real hub) and the
// engine stand-in on one origin.
func boardServer(t *testing.T) (string, *boardEngine) {
	t.Helper()
	db := redistest.New(t)
	eng := &boardEngine{rdb: db.Client, prefix: fmt.Sprintf("board%d:", time.Now().UnixNano())}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	hub, err := holdstream.New(holdstream.Config{Redis: db.Client, Source: eng, Prefix: eng.prefix, Logger: log})
	require.NoError(t, err)
	require.NoError(t, hub.Start(context.Background()))
	app, err := web.New(web.Options{Logger: log})
	require.NoError(t, err)
	holdstream.Register(app, hub)
	board.Register(app)
	app.Get("/v1/appointment-types/:id/timeslots", eng.timeslots)
	app.Post("/v1/holds", eng.createHold)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hub.Shutdown(ctx)
		_ = app.Shutdown()
	})
	return "http://" + ln.Addr().String(), eng
}

// chromium finds Debian's chromium (test/run installs it when missing).
func chromium(t *testing.T) string {
	for _, name := range []string{os.Getenv("FLOWGATE_TEST_CHROMIUM"), "chromium", "chromium-browser"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not installed (test/run installs Debian's chromium when it can)")
	return ""
}

// screenshotPath is where the board's screenshot goes:
// $FLOWGATE_TEST_ARTIFACTS (default: the system temp dir).
func screenshotPath(t *testing.T, name string) string {
	dir := os.Getenv("FLOWGATE_TEST_ARTIFACTS")
	if dir == "" {
		dir = os.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return filepath.Join(dir, name)
}

// TestBoardGreysAHeldSlotLiveInHeadlessChromium opens /board in headless
// Chromium, makes a hold over HTTP and sees the cell turn grey (class and
// computed colour) without a reload; a release turns it green again. The
// screenshot of the greyed board is saved and its path printed.
func TestBoardGreysAHeldSlotLiveInHeadlessChromium(t *testing.T) {
	exe := chromium(t)
	base, eng := boardServer(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(900, 520))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTimeout()

	cell := `td[data-specialist="spec2"][data-start="2026-11-24T16:30:00.000Z"]` // 10:30 Chicago, Dr. Bo
	var before, after, colour, held10 string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/board?appointmentTypeId=cleaning&date=2026-11-24"),
		chromedp.WaitVisible(`body[data-state="live"]`, chromedp.ByQuery),
		chromedp.AttributeValue(cell, "class", &before, nil, chromedp.ByQuery),
		chromedp.AttributeValue(`td[data-specialist="spec1"][data-start="2026-11-24T16:00:00.000Z"]`, "class", &held10, nil, chromedp.ByQuery),
	))
	require.Equal(t, "free", before)
	require.Equal(t, "held", held10, "a slot held before the page opened is grey from the timeslots answer")

	resp, err := http.Post(base+"/v1/holds", "application/json",
		strings.NewReader(`{"appointmentTypeId":"cleaning","slotStartDate":"2026-11-24T16:30:00Z","clientId":"web-user-1","specialistId":"spec2"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	var png []byte
	require.NoError(t, chromedp.Run(ctx,
		chromedp.WaitVisible(cell+`.held`, chromedp.ByQuery),
		chromedp.AttributeValue(cell, "class", &after, nil, chromedp.ByQuery),
		chromedp.Evaluate(`getComputedStyle(document.querySelector('`+cell+`')).backgroundColor`, &colour),
		chromedp.FullScreenshot(&png, 100), // 100: PNG (less is JPEG),
	))
	require.Equal(t, "held", after)
	require.Equal(t, "rgb(140, 149, 159)", colour, "the held cell is grey as a person sees it")
	path := screenshotPath(t, fmt.Sprintf("board-held-%d.png", time.Now().Unix()))
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot of the board with the held slot: %s", path)

	eng.mu.Lock()
	h := eng.holds[0]
	eng.mu.Unlock()
	ev, _ := json.Marshal(holdstream.Event{Type: holdstream.TypeRelease, Hold: h})
	require.NoError(t, eng.rdb.Publish(context.Background(), eng.prefix+"holds:events:cleaning", ev).Err())
	require.NoError(t, chromedp.Run(ctx, chromedp.WaitVisible(cell+`.free`, chromedp.ByQuery)))
}
