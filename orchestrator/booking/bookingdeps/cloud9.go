package bookingdeps

import (
	"context"
	"errors"

	"github.com/flowgate/flowgate/orchestrator/booking/bookingsvc"
	"github.com/flowgate/flowgate/orchestrator/cloud9"
)

// Cloud9 is bookingsvc.Cloud9 on the real client. Give it a client without
// a limiter (Client.WithoutLimiter): the service takes the limiter's turn
// itself before each write.
type Cloud9 struct{ C *cloud9.Client }

var _ bookingsvc.Cloud9 = Cloud9{}

// SetPatient implements bookingsvc.Cloud9.
func (a Cloud9) SetPatient(ctx context.Context, in bookingsvc.PatientInput) (string, string, error) {
	guid, result, err := a.C.SetPatient(ctx, cloud9.PatientInput{
		FirstName: in.FirstName, LastName: in.LastName, ProviderGUID: in.ProviderGUID, LocationGUID: in.LocationGUID,
		BirthDate: in.BirthDate, Phone: in.Phone, Email: in.Email, Gender: in.Gender,
	})
	return guid, result, convert(err)
}

// SetAppointment implements bookingsvc.Cloud9.
func (a Cloud9) SetAppointment(ctx context.Context, in bookingsvc.AppointmentInput) (string, string, error) {
	guid, result, err := a.C.SetAppointment(ctx, cloud9.AppointmentInput{
		PatientGUID: in.PatientGUID, StartTime: in.StartTime, ScheduleViewGUID: in.ScheduleViewGUID,
		ScheduleColumnGUID: in.ScheduleColumnGUID, AppointmentTypeGUID: in.AppointmentTypeGUID,
		Minutes: in.Minutes, Note: in.Note,
	})
	return guid, result, convert(err)
}

// SetPatientComment implements bookingsvc.Cloud9.
func (a Cloud9) SetPatientComment(ctx context.Context, patientGUID, comment string) (string, string, error) {
	guid, result, err := a.C.SetPatientComment(ctx, patientGUID, comment)
	return guid, result, convert(err)
}

// GetAppointmentListByPatient implements bookingsvc.Cloud9.
func (a Cloud9) GetAppointmentListByPatient(ctx context.Context, patientGUID string) ([]bookingsvc.ExistingAppointment, error) {
	list, err := a.C.GetAppointmentListByPatient(ctx, patientGUID)
	if err != nil {
		return nil, convert(err)
	}
	out := make([]bookingsvc.ExistingAppointment, 0, len(list))
	for _, ap := range list {
		out = append(out, bookingsvc.ExistingAppointment{AppointmentGUID: ap.AppointmentGUID,
			StartTime: ap.AppointmentDateTime, ScheduleColumnGUID: ap.ScheduleColumnGUID, Status: ap.StatusDescription})
	}
	return out, nil
}

// convert maps the client's errors to the service's: a certain transport
// failure that is not a timeout (connection refused) is UNAVAILABLE, so the
// booking is queued; input the client refused before sending is a certain
// CLOUD9_ERROR; anything unknown stays as it is, which the service takes
// as uncertain.
func convert(err error) error {
	if err == nil {
		return nil
	}
	var ce *cloud9.Error
	if errors.As(err, &ce) {
		class := string(ce.Class)
		if ce.Kind == cloud9.KindTransport && !ce.Uncertain && ce.Class != cloud9.ClassTimeout {
			class = bookingsvc.ClassUnavailable
		}
		code := ce.Code
		if code < 0 {
			code = 0
		}
		return &bookingsvc.Cloud9Error{Class: class, Code: code, Message: ce.Message, Uncertain: ce.Uncertain}
	}
	if errors.Is(err, cloud9.ErrInvalidInput) {
		return &bookingsvc.Cloud9Error{Class: bookingsvc.ClassCloud9, Message: err.Error()}
	}
	return err
}
