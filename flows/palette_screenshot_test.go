package flows_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// paletteScreenshot opens the editor in headless Chromium, checks that the
// palette lists every flowgate node and that no node of the flows is
// unknown, and saves a screenshot ($FLOWGATE_TEST_ARTIFACTS, and with
// -update-palette-screenshot node-red/palette/editor.png).
func paletteScreenshot(t *testing.T, base string) {
	t.Helper()
	exe := ""
	for _, name := range []string{os.Getenv("FLOWGATE_TEST_CHROMIUM"), "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); name != "" && err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		t.Skip("chromium not installed (test/run installs Debian's chromium when it can): the editor is not checked")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 800))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	var palette []string
	var unknown, rendered int
	var shot []byte
	err := chromedp.Run(ctx,
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(`.red-ui-palette-node[data-palette-type="flowgate-handler-out"]`, chromedp.ByQuery),
		chromedp.WaitReady(`#demo_s1`, chromedp.ByQuery),
		chromedp.Evaluate(`Array.from(document.querySelectorAll('.red-ui-palette-node[data-palette-type^="flowgate-"]')).map(e => e.getAttribute('data-palette-type'))`, &palette),
		// the sidebar folded away and the test's own tab hidden: the example flow gets the room
		chromedp.Evaluate(`RED.menu.setSelected("menu-item-sidebar", false); RED.workspaces.hide("fge2e"); RED.actions.invoke("core:zoom-out"); true`, nil),
		chromedp.Sleep(1500*time.Millisecond), // status dots arrive over the editor's websocket
		chromedp.Evaluate(`document.querySelectorAll('.red-ui-flow-node-unknown').length`, &unknown),
		chromedp.Evaluate(`document.querySelectorAll('#red-ui-workspace-chart .red-ui-flow-node').length`, &rendered),
		chromedp.CaptureScreenshot(&shot),
	)
	if err != nil {
		t.Fatalf("the editor in headless Chromium: %v", err)
	}
	sort.Strings(palette)
	want := []string{}
	for _, ty := range paletteTypes {
		if ty != "flowgate-config" { // config nodes are not in the palette
			want = append(want, ty)
		}
	}
	sort.Strings(want)
	if !reflect.DeepEqual(palette, want) {
		t.Errorf("the palette shows %v, want %v", palette, want)
	}
	if unknown != 0 || rendered < 20 {
		t.Errorf("the editor drew %d nodes of the example flow, %d of unknown type", rendered, unknown)
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("palette-editor-%d.png", time.Now().Unix()))
	if dir := os.Getenv("FLOWGATE_TEST_ARTIFACTS"); dir != "" {
		path = filepath.Join(dir, "palette-editor.png")
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("editor screenshot (%d bytes): %s", len(shot), path)
	if *updatePaletteShot {
		small, err := quantize(shot)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(paletteDir, "editor.png")
		if err := os.WriteFile(dst, small, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", dst, len(small))
	}
}

// quantize re-encodes a PNG with at most 256 colours, the most frequent
// ones (an editor screenshot is flat colours and anti-aliased text), each
// pixel mapped to the nearest: a third of the size or less.
func quantize(raw []byte) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	count := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			count[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	cols := make([]color.RGBA, 0, len(count))
	for c := range count {
		cols = append(cols, c)
	}
	sort.Slice(cols, func(i, j int) bool {
		if count[cols[i]] != count[cols[j]] {
			return count[cols[i]] > count[cols[j]]
		}
		return fmt.Sprint(cols[i]) < fmt.Sprint(cols[j])
	})
	if len(cols) > 256 {
		cols = cols[:256]
	}
	pal := make(color.Palette, len(cols))
	for i, c := range cols {
		pal[i] = c
	}
	out := image.NewPaletted(b, pal)
	memo := map[color.RGBA]uint8{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			i, ok := memo[c]
			if !ok {
				i = uint8(pal.Index(c))
				memo[c] = i
			}
			out.SetColorIndex(x, y, i)
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
