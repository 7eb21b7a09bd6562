package cloud9_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

func TestEncodeRequestEscapingAndNil(t *testing.T) {
	t.Parallel()
	req := cloud9.Request{ClientID: "c1d2e3f4-0000-4000-8000-000000000001", UserName: "flow&gate",
		Password: testPassword, Procedure: "SetPatientComment", Params: []cloud9.Param{
			cloud9.P("patGUID", patientGUID),
			cloud9.P("patComment", `Child: Zoë O'Brien & "Tommy" <twins> | DOB: 01/15/2015 | 保険`),
			cloud9.NilParam("pcGUID"),
			cloud9.P("patguid", "lower-case spelling is a different parameter"),
			cloud9.P("empty", ""),
			cloud9.BitParam("morning", true),
			cloud9.BitParam("afternoon", false),
			cloud9.IntParam("Minutes", 45),
			cloud9.TimeParam("startDate", time.Date(2025, 11, 5, 8, 30, 0, 0, time.UTC)),
		}}
	body, err := cloud9.EncodeRequest(req)
	require.NoError(t, err)
	goldenXML(t, "cloud9_request_escaping", body)

	s := string(body)
	require.Contains(t, s, `&amp; &#34;Tommy&#34; &lt;twins&gt;`)
	require.Contains(t, s, `<pcGUID xsi:nil="true"></pcGUID>`)
	require.Contains(t, s, `<startDate>11/5/2025 8:30:00 AM</startDate>`)
	require.NotContains(t, s, "<twins>")

	back, err := cloud9.DecodeRequest(body)
	require.NoError(t, err)
	require.Equal(t, req, *back, "the envelope round-trips")
}

func TestEncodeRequestControlCharacters(t *testing.T) {
	t.Parallel()
	body, err := cloud9.EncodeRequest(cloud9.Request{ClientID: "c", UserName: "u", Password: "p",
		Procedure: "SetPatientComment", Params: []cloud9.Param{cloud9.P("patComment", "bell\x07 and\nnewline")}})
	require.NoError(t, err)
	back, err := cloud9.DecodeRequest(body)
	require.NoError(t, err, "a character XML cannot carry must not break the envelope")
	require.Equal(t, "bell\uFFFD and\nnewline", back.Params[0].Value)
}

func TestEncodeRequestRejectsBadNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "1abc", "a b", "a<b", "xsi:nil", "a/b", "a&b"} {
		_, err := cloud9.EncodeRequest(cloud9.Request{Procedure: "GetLocations", Params: []cloud9.Param{cloud9.P(name, "v")}})
		require.Error(t, err, "parameter name %q", name)
	}
	_, err := cloud9.EncodeRequest(cloud9.Request{Procedure: "Get Locations"})
	require.Error(t, err)
	_, err = cloud9.EncodeRequest(cloud9.Request{Procedure: "GetLocations", Params: []cloud9.Param{cloud9.P("schdvwGUIDs", "a"), cloud9.P("pat_guid.v-2", "b")}})
	require.NoError(t, err)
}

const successAnswer = `<?xml version="1.0" encoding="utf-8"?>
<GetDataResponse xmlns="http://schemas.practica.ws/cloud9/partners/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <ResponseStatus>Success</ResponseStatus>
  <Records>
    <Record>
      <StartTime>11/5/2025 8:30:00 AM</StartTime>
      <EndTime>11/5/2025 9:15:00 AM</EndTime>
      <ScheduleViewGUID>4c9e9333-4951-4eb0-8d97-e1ad83ef422d</ScheduleViewGUID>
      <ScheduleViewDescription>Ortho &amp; Exams</ScheduleViewDescription>
      <ScheduleColumnGUID>07687884-7e37-49aa-8028-d43b751c9034</ScheduleColumnGUID>
      <ScheduleColumnDescription>CHAIR 8</ScheduleColumnDescription>
      <ScheduleTemplateName xsi:nil="true" />
      <Minutes>45</Minutes>
    </Record>
    <Record>
      <StartTime>11/5/2025 10:00:00 AM</StartTime>
      <Minutes>not a number</Minutes>
    </Record>
  </Records>
</GetDataResponse>`

func TestDecodeSuccess(t *testing.T) {
	t.Parallel()
	r, err := cloud9.DecodeResponse([]byte(successAnswer))
	require.NoError(t, err)
	require.True(t, r.Success())
	require.Equal(t, -1, r.ErrorCode, "no ErrorCode element")
	require.Len(t, r.Records, 2)
	rec := r.Records[0]
	require.Equal(t, "StartTime", rec[0].Name, "fields keep Cloud9's order")
	require.Equal(t, "Ortho & Exams", rec.Get("ScheduleViewDescription"))
	require.Equal(t, "11/5/2025 8:30:00 AM", rec.Get("starttime"), "a spelling differing in case is found")
	v, ok := rec.Lookup("ScheduleTemplateName")
	require.True(t, ok)
	require.Empty(t, v)
	require.True(t, rec[6].Nil)
	_, ok = rec.Lookup("Missing")
	require.False(t, ok)
	require.Equal(t, "45", rec.Map()["Minutes"])
	require.Empty(t, r.Result(), "a read has no Result")
}

func TestDecodeError(t *testing.T) {
	t.Parallel()
	r, err := cloud9.DecodeResponse([]byte(`<GetDataResponse xmlns="http://schemas.practica.ws/cloud9/partners/">` +
		`<ResponseStatus>Error</ResponseStatus><ErrorCode> 8 </ErrorCode>` +
		`<ErrorMessage>Too many requests within the timeframe for procedure SetAppointment</ErrorMessage></GetDataResponse>`))
	require.NoError(t, err)
	require.False(t, r.Success())
	require.Equal(t, 8, r.ErrorCode)
	require.Equal(t, "Too many requests within the timeframe for procedure SetAppointment", r.ErrorMessage)
	require.Empty(t, r.Records)
}

func TestDecodeResultAndEmptyRecords(t *testing.T) {
	t.Parallel()
	r, err := cloud9.DecodeResponse([]byte(`<GetDataResponse><ResponseStatus>Success</ResponseStatus><Records><Record>` +
		`<Result>Error: This appointment cannot be scheduled in the specified time slot.</Result></Record></Records></GetDataResponse>`))
	require.NoError(t, err)
	require.True(t, r.Success())
	require.Equal(t, "Error: This appointment cannot be scheduled in the specified time slot.", r.Result())

	for _, empty := range []string{`<Records/>`, `<Records></Records>`, ``} {
		r, err := cloud9.DecodeResponse([]byte(`<GetDataResponse><ResponseStatus>Success</ResponseStatus>` + empty + `</GetDataResponse>`))
		require.NoError(t, err)
		require.True(t, r.Success())
		require.Empty(t, r.Records)
		require.Empty(t, r.Result())
	}
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func TestDecodeByContent(t *testing.T) {
	t.Parallel()
	plain := []byte(successAnswer)
	utf16le := func(s string) []byte {
		out := []byte{0xff, 0xfe}
		for _, u := range utf16.Encode([]rune(s)) {
			out = append(out, byte(u), byte(u>>8))
		}
		return out
	}
	cases := map[string][]byte{
		"gzip":                 gzipped(t, plain),
		"gzip twice":           gzipped(t, gzipped(t, plain)),
		"utf-8 bom":            append([]byte{0xef, 0xbb, 0xbf}, plain...),
		"utf-16 bom":           utf16le(successAnswer),
		"utf-16 mislabel":      bytes.Replace(plain, []byte(`encoding="utf-8"`), []byte(`encoding="utf-16"`), 1),
		"no declaration or ns": bytes.Replace(bytes.Replace(plain, []byte(`<?xml version="1.0" encoding="utf-8"?>`), nil, 1), []byte(` xmlns="http://schemas.practica.ws/cloud9/partners/"`), nil, 1),
	}
	for name, body := range cases {
		r, err := cloud9.DecodeResponse(body)
		require.NoError(t, err, name)
		require.Len(t, r.Records, 2, name)
		require.Equal(t, "Ortho & Exams", r.Records[0].Get("ScheduleViewDescription"), name)
	}

	r, err := cloud9.DecodeResponse([]byte(`<GetDataResponse><ResponseStatus>Success</ResponseStatus><Records><Record><Name>A&nbsp;B</Name></Record></Records></GetDataResponse>`))
	require.NoError(t, err)
	require.Equal(t, "A\u00a0B", r.Records[0].Get("Name"), "HTML entities of a text/html answer")

	latin1 := []byte("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><GetDataResponse><ResponseStatus>Success</ResponseStatus>" +
		"<Records><Record><Name>Zo\xeb</Name></Record></Records></GetDataResponse>")
	r, err = cloud9.DecodeResponse(latin1)
	require.NoError(t, err)
	require.Equal(t, "Zoë", r.Records[0].Get("Name"))
}

func TestDecodeMalformed(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"empty":      "",
		"html":       "<html><body>Service Unavailable</body></html>",
		"truncated":  successAnswer[:200],
		"not xml":    "Too many requests",
		"bad gzip":   "\x1f\x8b\x08garbage",
		"bad charse": `<?xml version="1.0" encoding="ebcdic"?><GetDataResponse/>`,
	} {
		_, err := cloud9.DecodeResponse([]byte(body))
		require.ErrorIs(t, err, cloud9.ErrMalformed, name)
	}
}

func TestResponseRoundTrip(t *testing.T) {
	t.Parallel()
	in := &cloud9.Response{Status: "Error", ErrorCode: 3, ErrorMessage: "Invalid value for parameter: 'startDate' <&>"}
	out, err := cloud9.DecodeResponse(answer(t, in))
	require.NoError(t, err)
	require.Equal(t, in, out)

	in = success(cloud9.Record{{Name: "Result", Value: "Appointment GUID Added: " + apptGUID}}, cloud9.Record{{Name: "X", Nil: true}})
	out, err = cloud9.DecodeResponse(answer(t, in))
	require.NoError(t, err)
	require.Equal(t, in, out)
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(successAnswer))
	f.Add([]byte(`<GetDataResponse><ResponseStatus>Error</ResponseStatus><ErrorCode>8</ErrorCode><ErrorMessage>Too many requests</ErrorMessage></GetDataResponse>`))
	f.Add([]byte(`<GetDataResponse><Records><Record><Result>Error: x</Result></Record></Records></GetDataResponse>`))
	f.Add([]byte(`<GetDataResponse><Records><Record><A><B>nested</B></A></Record></Records><Unknown/></GetDataResponse>`))
	f.Add([]byte("\x1f\x8b"))
	f.Add([]byte{0xff, 0xfe, '<', 0})
	f.Add(charsetAnswer("windows-1252", []byte("Zo\xeb O\x92Brien \x93Zo\x94 \x81\x8d")))
	f.Add(charsetAnswer("iso-8859-1", []byte("\x80\x9f\xff")))
	f.Add(charsetAnswer("shift_jis", []byte("\x82\xa0\x82")))
	f.Add(charsetAnswer("utf-16", []byte("\xff\xfe")))
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(successAnswer))
	_ = zw.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		// Any body read in a header charset decodes or is ErrMalformed.
		for _, ct := range []string{"text/html; charset=windows-1252", "text/html; charset=shift_jis"} {
			if lr, err := cloud9.DecodeResponseLabelled(data, ct); err != nil {
				require.ErrorIs(t, err, cloud9.ErrMalformed)
				require.Nil(t, lr)
			} else {
				require.NotNil(t, lr)
			}
		}
		r, err := cloud9.DecodeResponse(data)
		if err != nil {
			require.Nil(t, r)
			return
		}
		_ = r.Success()
		_ = r.Result()
		for _, rec := range r.Records {
			_ = rec.Map()
		}
		if r.ErrorCode < -1 {
			return
		}
		// What decodes re-encodes to the same thing (when its names are
		// plain XML names).
		enc, err := cloud9.EncodeResponse(r)
		if err != nil {
			return
		}
		again, err := cloud9.DecodeResponse(enc)
		require.NoError(t, err)
		require.Equal(t, r.Status, again.Status)
		require.Equal(t, r.ErrorCode, again.ErrorCode)
		require.Equal(t, len(r.Records), len(again.Records))
	})
}

func slotsAnswer(n int) *cloud9.Response {
	recs := make([]cloud9.Record, n)
	for i := range recs {
		start := time.Date(2025, 11, 5, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 45 * time.Minute)
		recs[i] = cloud9.Record{
			{Name: "StartTime", Value: cloud9.FormatTime(start)}, {Name: "EndTime", Value: cloud9.FormatTime(start.Add(45 * time.Minute))},
			{Name: "ScheduleViewGUID", Value: viewGUID}, {Name: "ScheduleViewDescription", Value: "Ortho"},
			{Name: "ScheduleColumnGUID", Value: columnGUID}, {Name: "ScheduleColumnDescription", Value: fmt.Sprintf("CHAIR %d", i%8+1)},
			{Name: "ScheduleTemplateName", Value: "Default"}, {Name: "AppointmentClassGUID", Value: typeGUID},
			{Name: "AppointmentClassDescription", Value: "New Patient"}, {Name: "AppointmentTypeGUID", Value: typeGUID},
			{Name: "AppointmentTypeDescription", Value: "New Patient Consult"}, {Name: "Minutes", Value: "45"},
			{Name: "LocationGUID", Value: "1fef9297-7c8b-426b-b0d1-f2275136e48b"},
		}
	}
	return success(recs...)
}

func BenchmarkEncodeDecode(b *testing.B) {
	req := cloud9.Request{ClientID: "c1d2e3f4-0000-4000-8000-000000000001", UserName: "flowgate", Password: testPassword,
		Procedure: cloud9.ProcSetAppointment, Params: []cloud9.Param{
			cloud9.P("PatientGUID", patientGUID), cloud9.P("StartTime", "11/5/2025 8:30:00 AM"),
			cloud9.P("ScheduleViewGUID", viewGUID), cloud9.P("ScheduleColumnGUID", columnGUID),
			cloud9.P("AppointmentTypeGUID", typeGUID), cloud9.IntParam("Minutes", 45),
			cloud9.P("VendorUserName", "flowgate-iva"), cloud9.P("Note", "Child: Tommy & Ann | DOB: 01/15/2015"),
		}}
	b.Run("request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cloud9.EncodeRequest(req); err != nil {
				b.Fatal(err)
			}
		}
	})
	write := answer(b, result("Appointment GUID Added: "+apptGUID))
	b.Run("write_answer", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(write)))
		for b.Loop() {
			if _, err := cloud9.DecodeResponse(write); err != nil {
				b.Fatal(err)
			}
		}
	})
	slots := answer(b, slotsAnswer(50))
	zipped := gzipped(b, slots)
	for name, body := range map[string][]byte{"50_slots": slots, "50_slots_gzip": zipped} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := cloud9.DecodeResponse(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
