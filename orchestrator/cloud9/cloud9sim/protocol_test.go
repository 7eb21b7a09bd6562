package cloud9sim_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flowgate/flowgate/orchestrator/cloud9/cloud9sim"
)

func TestAnswerIsXMLLabelledHTML(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, raw := b.post(t, requestXML("GetLocations"))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Empty(t, resp.Header.Get("Content-Encoding"))
	require.True(t, bytes.HasPrefix(raw, []byte(`<?xml version="1.0" encoding="utf-8"?><GetDataResponse xmlns="http://schemas.practica.ws/cloud9/partners/"`)), "%s", raw)
	require.Contains(t, string(raw), `<ResponseStatus>Success</ResponseStatus><Records><Record><LocationGUID>1fef9297-7c8b-426b-b0d1-f2275136e48b</LocationGUID>`)
}

func TestAnyPathPostOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, err := b.client.Post(strings.TrimSuffix(b.url, "GetData.ashx")+"some/other/path", "text/xml", strings.NewReader(requestXML("GetLocations")))
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, "Success", parseAnswer(t, raw).Status)

	resp, err = b.client.Get(b.url)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "POST", resp.Header.Get("Allow"))
}

func TestInvalidRequestInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, body := range map[string]string{
		"not xml":         `{"Procedure":"GetLocations"}`,
		"truncated":       requestXML("GetLocations")[:120],
		"wrong root":      `<GetData xmlns="http://schemas.practica.ws/cloud9/partners/"><Procedure>GetLocations</Procedure></GetData>`,
		"no namespace":    `<GetDataRequest><Procedure>GetLocations</Procedure></GetDataRequest>`,
		"other namespace": `<GetDataRequest xmlns="urn:x"><Procedure>GetLocations</Procedure></GetDataRequest>`,
		"too big":         requestXML("SetPatientComment", "patComment", strings.Repeat("x", 2<<20)),
	} {
		t.Run(name, func(t *testing.T) {
			_, raw := b.post(t, body)
			parseAnswer(t, raw).requireError(t, cloud9sim.CodeInvalidInput, "Invalid request input.")
		})
	}
	// <Parameters> may be absent.
	_, raw := b.post(t, `<GetDataRequest xmlns="http://schemas.practica.ws/cloud9/partners/"><Procedure>GetLocations</Procedure></GetDataRequest>`)
	require.Equal(t, "Success", parseAnswer(t, raw).Status)
	// No procedure at all is a missing parameter.
	_, raw = b.post(t, `<GetDataRequest xmlns="http://schemas.practica.ws/cloud9/partners/"></GetDataRequest>`)
	parseAnswer(t, raw).requireError(t, cloud9sim.CodeMissingParameter, "A required parameter was not specified.")
}

func TestCredentials(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *cloud9sim.Config) {
		c.ClientID, c.Username, c.Password = "C15AA02A-ADC1-40AE-A2B5-D2E39173AE56", "tester", "secret"
	})
	// requestXML sends the lower-case client id, tester and secret.
	require.Equal(t, "Success", b.call(t, "GetLocations").Status)

	for _, body := range []string{
		strings.Replace(requestXML("GetLocations"), "secret", "Secret", 1),
		strings.Replace(requestXML("GetLocations"), "<UserName>tester", "<UserName>other", 1),
		strings.Replace(requestXML("GetLocations"), "c15aa02a", "d15aa02a", 1),
	} {
		_, raw := b.post(t, body)
		parseAnswer(t, raw).requireError(t, cloud9sim.CodeBadCredentials, "Invalid client / username / password combination.")
	}
	// Credentials come before the procedure check.
	_, raw := b.post(t, strings.Replace(requestXML("Nope"), "secret", "x", 1))
	require.Equal(t, "1", parseAnswer(t, raw).Code)
}

func TestUnknownProcedureIsNotAuthorized(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.call(t, "GetAppointmentListByDate", "dtAppointment", "1/1/2026").
		requireError(t, cloud9sim.CodeNotAuthorized, "Procedure 'GetAppointmentListByDate' is not authorized.")
	// Procedure names are case-sensitive too.
	b.call(t, "getlocations").requireError(t, cloud9sim.CodeNotAuthorized, "Procedure 'getlocations' is not authorized.")
	require.Equal(t, 1, b.sim.Calls("getlocations"))
}

func TestParametersAreCaseSensitiveAndNilIsAbsent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.createPatient(t, "Ann", "Lee")
	// patGUID is GetAppointmentListByPatient's spelling; patguid is not.
	b.call(t, "GetAppointmentListByPatient", "patguid", p).
		requireError(t, cloud9sim.CodeMissingParameter, "A required parameter was not specified.")
	require.Equal(t, "Success", b.call(t, "GetAppointmentListByPatient", "patGUID", p).Status)
	// ... and GetPatientInformation's is patguid.
	require.Len(t, b.call(t, "GetPatientInformation", "patguid", p).Records, 1)

	body := strings.Replace(requestXML("SetPatient", "patientFirstName", "A", "patientLastName", "B",
		"providerGUID", cloud9sim.DefaultOrthodontistGUID, "locationGUID", cloud9sim.DefaultLocationGUID,
		"VendorUserName", "x"), "<VendorUserName>x</VendorUserName>", `<VendorUserName xsi:nil="true" />`, 1)
	_, raw := b.post(t, body)
	parseAnswer(t, raw).requireError(t, cloud9sim.CodeMissingParameter, "A required parameter was not specified.")
}

func TestSpecialCharactersRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.createPatient(t, `O'Brien & "Sons"`, "<Lee>")
	note := "Child: Tommy | DOB: 01/15/2015 | Insurance: A&B <PPO> \"gold\" 'x'"
	res := b.call(t, "SetPatientComment", "patGUID", p, "patComment", note).result(t)
	require.True(t, strings.HasPrefix(res, "Patient Comment GUID Added: "), res)
	require.Equal(t, note, b.sim.Comments()[0].Text)

	info := b.call(t, "GetPatientInformation", "patguid", p).Records[0]
	require.Equal(t, `O'Brien & "Sons" <Lee>`, info["PatientFullName"])
}

func TestGzipByContent(t *testing.T) {
	t.Parallel()
	for _, declared := range []bool{false, true} {
		b := setup(t, func(c *cloud9sim.Config) { c.Gzip, c.GzipDeclared = !declared, declared })
		// A transport that asks for gzip itself gets the bytes as sent.
		req, err := http.NewRequest(http.MethodPost, b.url, strings.NewReader(requestXML("GetChairSchedules")))
		require.NoError(t, err)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := b.client.Do(req)
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
		if declared {
			require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"))
		} else {
			require.Empty(t, resp.Header.Get("Content-Encoding"), "undeclared: decode by content")
		}
		require.Equal(t, []byte{0x1f, 0x8b}, raw[:2])
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		require.NoError(t, err)
		plain, err := io.ReadAll(zr)
		require.NoError(t, err)
		require.Len(t, parseAnswer(t, plain).Records, 4)
	}
}
