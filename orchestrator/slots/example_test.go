package slots_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/flowgate/flowgate/orchestrator/slots"
)

func ExampleGroups() {
	list := []slots.Slot{
		slot("1/20/2026 9:45:00 AM"),
		slot("1/20/2026 8:00:00 AM"),
		slot("1/20/2026 8:45:00 AM"),
		slot("1/20/2026 2:00:00 PM"),
	}
	groups := slots.Groups(list, 2, 40*time.Minute)
	for _, g := range groups {
		fmt.Println(g.Day, g.Date, g.Times)
	}
	plan := slots.BookingPlan(groups, list, 2)
	fmt.Println(plan[1].ChildLabel, plan[1].StartTime)
	// Output:
	// Tuesday 01/20/2026 [8:00 AM 8:45 AM]
	// Tuesday 01/20/2026 [8:45 AM 9:45 AM]
	// Child 2 1/20/2026 8:45:00 AM
}

func ExampleDecodeToken() {
	token := slots.EncodeToken(slot("1/20/2026 10:00:00 AM"))
	ts, err := slots.DecodeToken(token)
	fmt.Println(ts.StartTime, ts.Minutes, err)

	_, err = slots.DecodeToken(token[:40])
	var te *slots.TokenError
	fmt.Println(errors.Is(err, slots.ErrMalformedToken), errors.As(err, &te) && te.Reason == slots.ReasonJSON)
	// Output:
	// 1/20/2026 10:00:00 AM 45 <nil>
	// true true
}
