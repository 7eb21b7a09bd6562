package authtoken_test

import (
	"strings"
	"testing"

	"github.com/flowgate/flowgate/orchestrator/booking/authtoken"
	"github.com/flowgate/flowgate/test/clocktest"
)

func FuzzValidate(f *testing.F) {
	clk := clocktest.New(t0)
	s := newSigner(f, clk)
	good, _, err := s.Issue(session, guid)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, guid)
	f.Add(good, strings.ToLower(guid))
	f.Add(good+"x", guid)
	f.Add("", "")
	f.Add(".", guid)
	f.Add("a.b.c", guid)
	f.Add(signRaw(secret, `{"patientGUID":"x","expiresAt":99999999999999}`), "x")
	f.Add(signRaw(secret, `{"patientGUID":"x","expiresAt":-1}`), "x")
	f.Add(signRaw(secret, `{"patientGUID":{},"expiresAt":[]}`), "x")
	f.Add(signRaw(secret, `{"patientGUID":"x","expiresAt":1e400}`), "x")
	f.Add(signPayloadText(secret, "%%%"), "x")
	f.Fuzz(func(t *testing.T, token, patientGUID string) {
		p, err := s.Validate(token, patientGUID)
		if err != nil {
			if authtoken.CodeOf(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if !strings.EqualFold(strings.TrimSpace(patientGUID), p.PatientGUID) || p.PatientGUID == "" {
			t.Fatalf("accepted %q for %q", p.PatientGUID, patientGUID)
		}
		if t0.UnixMilli() > p.ExpiresAt {
			t.Fatalf("accepted an expired token: %+v", p)
		}
		if _, err := s.Decide(authtoken.ModeToken, token, patientGUID, ""); err != nil {
			t.Fatalf("Validate accepts, Decide refuses: %v", err)
		}
	})
}
