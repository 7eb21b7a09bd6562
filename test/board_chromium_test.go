package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/test/flowgatetest"
	"github.com/flowgate/flowgate/test/redistest"
)

// boardType is the schedule file's type the board test shows: 30-minute
// consultations of Dr. Adams, Dr. Baker and Dr. Chen.
const boardType = "consultation"

// boardSlot is one timeslot of the catalogue's answer.
type boardSlot struct {
	Start time.Time `json:"slotStartDate"`
	Free  []string  `json:"specialistIds"`
}

// boardBinary starts the flowgate binary with the schedule-file source
// (orchestrator/holds/availability/testdata/schedule.json): /board,
// /v1/holds/stream, the timeslots and the real /v1/holds on one origin.
func boardBinary(t *testing.T) string {
	t.Helper()
	schedule, err := filepath.Abs("../orchestrator/holds/availability/testdata/schedule.json")
	require.NoError(t, err)
	db := redistest.New(t)
	p := flowgatetest.Start(t, withSecrets(map[string]string{"REDIS_URL": db.URL(), "HOLDS_SCHEDULE_FILE": schedule}))
	return p.Base
}

// boardDay is the next Tuesday after today (Dr. Baker and Dr. Chen work
// Tuesdays in the schedule file), as YYYY-MM-DD.
func boardDay() string {
	d := time.Now().AddDate(0, 0, 1)
	for d.Weekday() != time.Tuesday {
		d = d.AddDate(0, 0, 1)
	}
	return d.Format(time.DateOnly)
}

// freeSlots asks the binary for the day's consultation slots.
func freeSlots(t *testing.T, base, day string) []boardSlot {
	t.Helper()
	resp, err := http.Get(base + "/v1/appointment-types/" + boardType + "/timeslots?from=" + day + "&days=1&includeHeld=true")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out struct {
		Slots []boardSlot `json:"slots"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.GreaterOrEqual(t, len(out.Slots), 2, "no consultation slots on %s", day)
	return out.Slots
}

// postHold is the real POST /v1/holds; it returns the hold id.
func postHold(t *testing.T, base, client, specialist string, start time.Time) string {
	t.Helper()
	body, err := json.Marshal(map[string]string{"appointmentTypeId": boardType, "clientId": client,
		"slotStartDate": start.UTC().Format(time.RFC3339), "specialistId": specialist})
	require.NoError(t, err)
	resp, err := http.Post(base+"/v1/holds", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	var h struct {
		HoldID string `json:"holdId"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
	return h.HoldID
}

// cellOf is the board's cell of (specialist, start).
func cellOf(specialist string, start time.Time) string {
	return fmt.Sprintf(`td[data-specialist=%q][data-start=%q]`, specialist, start.UTC().Format("2006-01-02T15:04:05.000Z"))
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

// TestBoardGreysAHeldSlotLiveInHeadlessChromium opens the binary's /board
// in headless Chromium: a slot held before the page opened is grey from the
// timeslots answer; a hold made over the real POST /v1/holds turns a cell
// grey (class and computed colour) without a reload, and its DELETE turns
// it green again. The screenshot of the greyed board is saved and its path
// printed.
func TestBoardGreysAHeldSlotLiveInHeadlessChromium(t *testing.T) {
	exe := chromium(t)
	base := boardBinary(t)
	day := boardDay()
	list := freeSlots(t, base, day)
	require.NotEmpty(t, list[0].Free)
	require.NotEmpty(t, list[1].Free)
	early, late := list[0], list[1]
	postHold(t, base, "web-user-0", early.Free[0], early.Start) // held before the page opens

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(900, 760))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTimeout()

	cell := cellOf(late.Free[0], late.Start)
	var before, after, colour, heldEarly string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/board?appointmentTypeId="+url.QueryEscape(boardType)+"&date="+day),
		chromedp.WaitVisible(`body[data-state="live"]`, chromedp.ByQuery),
		chromedp.AttributeValue(cell, "class", &before, nil, chromedp.ByQuery),
		chromedp.AttributeValue(cellOf(early.Free[0], early.Start), "class", &heldEarly, nil, chromedp.ByQuery),
	))
	require.Equal(t, "free", before)
	require.Equal(t, "held", heldEarly, "a slot held before the page opened is grey from the timeslots answer")

	holdID := postHold(t, base, "web-user-1", late.Free[0], late.Start)
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

	req, err := http.NewRequest(http.MethodDelete, base+"/v1/holds/"+holdID+"?clientId=web-user-1", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, chromedp.Run(ctx, chromedp.WaitVisible(cell+`.free`, chromedp.ByQuery)))
}

// postBook books a held slot through POST /v1/appointment-types/{id}/book.
func postBook(t *testing.T, base, client, holdID string) {
	t.Helper()
	body, err := json.Marshal(map[string]string{"clientId": client, "holdId": holdID})
	require.NoError(t, err)
	resp, err := http.Post(base+"/v1/appointment-types/"+boardType+"/book", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
}

// TestOpsPagesAsAPersonSeesThemInHeadlessChromium: / links every ops page
// and says ready; /board without a type lists the types by name, a click
// opens that type's board titled by its name, and a slot booked through
// /v1 shows as booked (dark), not as an empty cell. Screenshots of the
// three pages are saved and their paths printed.
func TestOpsPagesAsAPersonSeesThemInHeadlessChromium(t *testing.T) {
	exe := chromium(t)
	base := boardBinary(t)
	day := boardDay()
	list := freeSlots(t, base, day)
	slot := list[0]
	require.NotEmpty(t, slot.Free)
	postBook(t, base, "web-booker", postHold(t, base, "web-booker", slot.Free[0], slot.Start))

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(900, 760))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()
	shot := func(name string, png []byte) {
		path := screenshotPath(t, fmt.Sprintf("%s-%d.png", name, time.Now().Unix()))
		require.NoError(t, os.WriteFile(path, png, 0o644))
		t.Logf("screenshot of %s: %s", name, path)
	}

	var landingPNG, typesPNG, boardPNG []byte
	var ready, links, first, title, heading, booked, bookedText, colour string
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(`body[data-ready]`, chromedp.ByQuery),
		chromedp.Text(`#ready`, &ready, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll('li a')].map(a => a.getAttribute('href')).join(' ')`, &links),
		chromedp.FullScreenshot(&landingPNG, 100),
	))
	require.Equal(t, "ready", ready)
	require.Equal(t, "/board /monitoring /openapi.json /metrics /healthz /readyz", links)
	shot("landing", landingPNG)

	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/board"),
		chromedp.WaitVisible(`body[data-types]`, chromedp.ByQuery),
		chromedp.Text(`#types li a`, &first, chromedp.ByQuery),
		chromedp.FullScreenshot(&typesPNG, 100),
	))
	require.Equal(t, "New patient consultation", first, "the types are listed by name")
	shot("board-types", typesPNG)

	cell := cellOf(slot.Free[0], slot.Start)
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(base+"/board?appointmentTypeId="+url.QueryEscape(boardType)+"&date="+day),
		chromedp.WaitVisible(`body[data-state="live"]`, chromedp.ByQuery),
		chromedp.Poll(`document.getElementById("type").textContent !== "Slots"`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Title(&title),
		chromedp.Text(`#type`, &heading, chromedp.ByQuery),
		chromedp.AttributeValue(cell, "class", &booked, nil, chromedp.ByQuery),
		chromedp.Text(cell, &bookedText, chromedp.ByQuery),
		chromedp.Evaluate(`getComputedStyle(document.querySelector('`+cell+`')).backgroundColor`, &colour),
		chromedp.FullScreenshot(&boardPNG, 100),
	))
	require.Equal(t, "New patient consultation", heading, "the board is titled by the type's name")
	require.Contains(t, title, "New patient consultation")
	require.Equal(t, "booked", booked)
	require.Equal(t, "booked", bookedText)
	require.Equal(t, "rgb(50, 56, 63)", colour, "a booked slot is dark, as a person sees it")
	shot("board-booked", boardPNG)
}

// TestBoardShowsACreateApptBookingInHeadlessChromium: on the Cloud9
// catalogue, a slot booked through the IVA face (createPatient →
// getApptSlots → createAppt, as README's quickstart does) shows as booked
// on the board, which Cloud9 no longer offers it on; the legend names every
// state a cell can take, and the chairs stand in natural order (8, 9, 10,
// 11). The screenshot is saved and its path printed.
func TestBoardShowsACreateApptBookingInHeadlessChromium(t *testing.T) {
	exe := chromium(t)
	db := redistest.New(t)
	p := flowgatetest.Start(t, withSecrets(map[string]string{"REDIS_URL": db.URL(), "CLOUD9_SIMULATOR": "true",
		"MONITORING_USER": e2eMonitorUser, "MONITORING_PASSWORD": e2eMonitorPass}))
	c := newBookingClient(t, p)
	pt := c.createPatient("Ann", "Board", "call-board")
	slot := c.slots("call-board", 1)[0]
	c.booked(tokenReq(pt.PatientGUID, pt.BookingAuthToken, slot, "Tom", "call-board"))

	wall, err := time.Parse("1/2/2006 3:04:05 PM", slot.StartTime)
	if err != nil {
		wall, err = time.Parse("01/02/2006 3:04 PM", slot.StartTime)
	}
	require.NoError(t, err, slot.StartTime)
	zone, err := time.LoadLocation("America/New_York") // PRACTICE_TIME_ZONE's default
	require.NoError(t, err)
	start := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), 0, 0, zone)
	cell := cellOf(slot.ScheduleColumnGUID, start)
	timeslots := p.Base + "/v1/appointment-types/" + url.PathEscape(slot.AppointmentTypeGUID) + "/timeslots?days=1&includeHeld=true&from=" + start.Format(time.DateOnly)
	recorded := func() bool { // flowgate records the booking for the board just after createAppt answers
		resp, err := http.Get(timeslots)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(body), `"bookedSpecialistIds":["`+slot.ScheduleColumnGUID+`"]`)
	}
	require.Eventually(t, recorded, 10*time.Second, 100*time.Millisecond, "the createAppt booking in the timeslots' bookedSpecialistIds")

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1000, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTimeout()
	var class, chairs, legend, used string
	var png []byte
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(p.Base+"/board?appointmentTypeId="+url.QueryEscape(slot.AppointmentTypeGUID)+"&date="+start.Format(time.DateOnly)),
		chromedp.WaitVisible(`body[data-state="live"]`, chromedp.ByQuery),
		chromedp.AttributeValue(cell, "class", &class, nil, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll('#head th[data-specialist]')].map(th => th.textContent).join(',')`, &chairs),
		chromedp.Evaluate(`[...document.querySelectorAll('#legend [data-state]')].map(s => s.dataset.state).sort().join(',')`, &legend),
		chromedp.Evaluate(`[...new Set([...document.querySelectorAll('#rows td')].map(td => td.className))].sort().join(',')`, &used),
		chromedp.FullScreenshot(&png, 100),
	))
	path := screenshotPath(t, fmt.Sprintf("board-createappt-%d.png", time.Now().Unix()))
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot of the board with the createAppt booking: %s", path)

	if class != "booked" {
		resp, err := http.Get(timeslots)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		t.Fatalf("the slot createAppt booked at %s on %s (%s) is %q on the board; timeslots: %s", slot.StartTime,
			slot.ScheduleColumnDescription, slot.ScheduleColumnGUID, class, body)
	}
	require.Equal(t, "booked,free,held,none", legend, "the legend names every state")
	for _, u := range strings.Split(used, ",") {
		require.Contains(t, strings.Split(legend, ","), u, "a cell state the legend does not name")
	}
	require.Equal(t, "Chair 8,Chair 9,Chair 10,Chair 11", chairs, "chairs in natural order")
}
