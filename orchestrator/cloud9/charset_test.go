package cloud9_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/encoding/charmap"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

// charsetAnswer is a one-record answer declaring charset, with name as the
// raw bytes of its <Name>.
func charsetAnswer(charset string, name []byte) []byte {
	head := `<?xml version="1.0" encoding="` + charset + `"?><GetDataResponse><ResponseStatus>Success</ResponseStatus><Records><Record><Name>`
	return append(append([]byte(head), name...), "</Name></Record></Records></GetDataResponse>"...)
}

func TestDecodeCharsets(t *testing.T) {
	t.Parallel()
	// Zoë O’Brien “Zo” €5 — in windows-1252 ’ is 0x92, “ 0x93, ” 0x94,
	// € 0x80 and ë 0xEB; latin-1 would read the first four as C1 controls.
	cp1252 := []byte("Zo\xeb O\x92Brien \x93Zo\x94 \x805")
	const want = "Zoë O’Brien “Zo” €5"
	for _, tc := range []struct {
		charset string
		body    []byte
		want    string
	}{
		{"windows-1252", cp1252, want},
		{"Windows-1252", cp1252, want},
		{"cp1252", cp1252, want},
		// What a .NET server labelled ISO-8859-1 sends is windows-1252 (the
		// WHATWG reading): ’ stays ’, not U+0092.
		{"ISO-8859-1", cp1252, want},
		{"latin1", cp1252, want},
		{"latin-1", []byte("Zo\xeb"), "Zoë"},
		{"us-ascii", []byte("Zoe O'Brien"), "Zoe O'Brien"},
		{"utf-8", []byte(want), want},
		{"UTF8", []byte(want), want},
		{"utf-16", []byte(want), want}, // the .NET mislabel of a UTF-8 body
		{"iso-8859-15", []byte("Zo\xeb \xa45"), "Zoë €5"},
		{"windows-1250", []byte("\x8aime\x9a"), "Šimeš"},
	} {
		r, err := cloud9.DecodeResponse(charsetAnswer(tc.charset, tc.body))
		require.NoError(t, err, tc.charset)
		got := r.Records[0].Get("Name")
		require.Equal(t, tc.want, got, tc.charset)
		require.True(t, utf8.ValidString(got), tc.charset)
	}

	for _, bad := range []string{"ebcdic", "klingon", "x-unknown"} {
		_, err := cloud9.DecodeResponse(charsetAnswer(bad, []byte("x")))
		require.ErrorIs(t, err, cloud9.ErrMalformed, bad)
		require.ErrorContains(t, err, "unsupported charset", bad)
	}
}

// FuzzDecodeWindows1252 encodes arbitrary text as windows-1252 under its
// declaration and checks it decodes back to the same text.
func FuzzDecodeWindows1252(f *testing.F) {
	f.Add("Zoë O’Brien “Zo”")
	f.Add("€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ")
	f.Add("Ñandú çà ÿ")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.ContainsAny(s, "<&>\r") || strings.ContainsFunc(s, unicode.IsControl) {
			t.Skip()
		}
		raw, err := charmap.Windows1252.NewEncoder().String(s)
		if err != nil {
			t.Skip() // not representable in windows-1252
		}
		r, err := cloud9.DecodeResponse(charsetAnswer("windows-1252", []byte(raw)))
		require.NoError(t, err)
		require.Equal(t, strings.TrimSpace(s), r.Records[0].Get("Name"))
	})
}

// TestCharsetRoundTripThroughSimulator writes a patient whose name has curly
// quotes and an accented letter and reads it back, with the simulator
// answering in windows-1252 (and in UTF-8, the control).
func TestCharsetRoundTripThroughSimulator(t *testing.T) {
	t.Parallel()
	const first, last = "Zoë", "O’Brien “Zo” 保" // 保 is not in windows-1252: sent as &#20445;
	require.ErrorContains(t, cloud9sim.Config{Charset: "klingon"}.Validate(), `Charset "klingon"`)
	for _, charset := range []string{"windows-1252", ""} {
		sim := cloud9sim.New(cloud9sim.Config{WriteLimit: cloud9sim.Unlimited, Seed: 1, Charset: charset})
		url, stop, err := sim.Start("127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, stop(context.Background())) })

		c := newClient(t, url)
		ctx := context.Background()
		guid, _, err := c.SetPatient(ctx, cloud9.PatientInput{FirstName: first, LastName: last,
			ProviderGUID: cloud9sim.DefaultOrthodontistGUID, LocationGUID: cloud9sim.DefaultLocationGUID})
		require.NoError(t, err, charset)
		rec, err := c.GetPatientInformation(ctx, guid)
		require.NoError(t, err, charset)
		require.Equal(t, first, rec.Get("PatientFirstName"), charset)
		require.Equal(t, last, rec.Get("PatientLastName"), charset)
		require.Equal(t, first+" "+last, rec.Get("PatientFullName"), charset)

		// The wire is really windows-1252: ’ is the single byte 0x92.
		raw, ctype := rawAnswer(t, url, cloud9.ProcGetPatientInformation, cloud9.P("patguid", guid))
		if charset != "" {
			require.Equal(t, "text/html; charset=windows-1252", ctype)
			require.Contains(t, string(raw), `encoding="windows-1252"`)
			require.Contains(t, string(raw), "O\x92Brien \x93Zo\x94 &#20445;")
			require.False(t, utf8.Valid(raw))
		} else {
			require.Contains(t, string(raw), last)
		}
	}
}

func mustRequest(t testing.TB, procedure string, params ...cloud9.Param) []byte {
	t.Helper()
	body, err := cloud9.EncodeRequest(cloud9.Request{ClientID: "c1d2e3f4-0000-4000-8000-000000000001",
		UserName: "flowgate", Password: testPassword, Procedure: procedure, Params: params})
	require.NoError(t, err)
	return body
}

// rawAnswer posts a request and returns the answer's bytes as sent and its
// Content-Type.
func rawAnswer(t testing.TB, url, procedure string, params ...cloud9.Param) ([]byte, string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	hresp, err := client.Post(url, "application/xml", bytes.NewReader(mustRequest(t, procedure, params...)))
	require.NoError(t, err)
	defer hresp.Body.Close()
	raw, err := io.ReadAll(hresp.Body)
	require.NoError(t, err)
	return raw, hresp.Header.Get("Content-Type")
}

// TestDecodeHeaderCharset: a body that declares no encoding is read in the
// charset of its Content-Type; the body's own declaration or BOM wins.
func TestDecodeHeaderCharset(t *testing.T) {
	t.Parallel()
	const want = "Zoë O’Brien “Zo”"
	bare := func(name []byte) []byte {
		return append(append([]byte(`<GetDataResponse><ResponseStatus>Success</ResponseStatus><Records><Record><Name>`), name...),
			"</Name></Record></Records></GetDataResponse>"...)
	}
	cp1252 := []byte("Zo\xeb O\x92Brien \x93Zo\x94")
	for _, tc := range []struct {
		name, contentType string
		body              []byte
	}{
		{"header only", "text/html; charset=windows-1252", bare(cp1252)},
		{"header, quoted and upper case", `text/html; charset="Windows-1252"`, bare(cp1252)},
		{"header with an xml declaration without encoding", "text/xml; charset=iso-8859-1", append([]byte(`<?xml version="1.0"?>`), bare(cp1252)...)},
		{"declaration wins over header", "text/html; charset=windows-1252", charsetAnswer("utf-8", []byte(want))},
		{"bom wins over header", "text/html; charset=windows-1252", append([]byte{0xef, 0xbb, 0xbf}, bare([]byte(want))...)},
		{"unknown header label ignored", "text/html; charset=klingon", bare([]byte(want))},
		{"no header", "", bare([]byte(want))},
	} {
		r, err := cloud9.DecodeResponseLabelled(tc.body, tc.contentType)
		require.NoError(t, err, tc.name)
		require.Equal(t, want, r.Records[0].Get("Name"), tc.name)
	}
	// Without the header the bare windows-1252 body is not UTF-8: refused.
	_, err := cloud9.DecodeResponse(bare(cp1252))
	require.ErrorIs(t, err, cloud9.ErrMalformed)

	// The client passes the answer's Content-Type on.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=windows-1252")
		_, _ = w.Write(bare(cp1252))
	}))
	t.Cleanup(srv.Close)
	rec, err := newClient(t, srv.URL).GetPatientInformation(context.Background(), patientGUID)
	require.NoError(t, err)
	require.Equal(t, want, rec.Get("Name"))
}
