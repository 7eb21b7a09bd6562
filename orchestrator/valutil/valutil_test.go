package valutil_test

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/flowgate/flowgate/orchestrator/valutil"
)

func TestValOrDefault(t *testing.T) {
	if got := valutil.ValOrDefault(0, 5); got != 5 {
		t.Errorf("zero int: got %d, want 5", got)
	}
	if got := valutil.ValOrDefault(-1, 5); got != -1 {
		t.Errorf("negative int: got %d, want -1 (kept)", got)
	}
	if got := valutil.ValOrDefault("", "flowgate"); got != "flowgate" {
		t.Errorf("empty string: got %q", got)
	}
	if got := valutil.ValOrDefault("x", "flowgate"); got != "x" {
		t.Errorf("set string: got %q", got)
	}
	type rate struct{ N int }
	if got := valutil.ValOrDefault(rate{}, rate{N: 5}); got.N != 5 {
		t.Errorf("zero struct: got %+v", got)
	}
	var w io.Writer
	if got := valutil.ValOrDefault[io.Writer](w, io.Discard); got != io.Discard {
		t.Errorf("nil interface: got %v", got)
	}
}

func TestValOrDefaultFuncRunsDefaultOnlyWhenZero(t *testing.T) {
	calls := 0
	def := func() string { calls++; return "host" }
	if got := valutil.ValOrDefaultFunc("set", def); got != "set" || calls != 0 {
		t.Errorf("set: got %q after %d calls, want set after 0", got, calls)
	}
	if got := valutil.ValOrDefaultFunc("", def); got != "host" || calls != 1 {
		t.Errorf("zero: got %q after %d calls, want host after 1", got, calls)
	}
}

func TestPositiveOrDefault(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{0, time.Second}, {-time.Millisecond, time.Second}, {time.Millisecond, time.Millisecond},
	} {
		if got := valutil.PositiveOrDefault(tc.in, time.Second); got != tc.want {
			t.Errorf("PositiveOrDefault(%v): got %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := valutil.PositiveOrDefault(uint(0), 3); got != 3 {
		t.Errorf("zero uint: got %d", got)
	}
}

func TestFuncOrDefault(t *testing.T) {
	fixed := time.Unix(42, 0)
	if got := valutil.FuncOrDefault(nil, time.Now); got == nil {
		t.Fatal("nil func: got nil")
	}
	now := valutil.FuncOrDefault(func() time.Time { return fixed }, time.Now)
	if !now().Equal(fixed) {
		t.Errorf("set func replaced: got %v", now())
	}
	errA := errors.New("a")
	var unset func() error
	if got := valutil.FuncOrDefault(unset, func() error { return errA }); !errors.Is(got(), errA) {
		t.Errorf("nil func: default not used")
	}
}

func TestFuncOrDefaultPanicsOnANonFuncType(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("FuncOrDefault of an int did not panic")
		}
	}()
	valutil.FuncOrDefault(0, 1)
}

func TestSliceAndMapOrDefault(t *testing.T) {
	if got := valutil.SliceOrDefault([]int{}, []int{1}); len(got) != 1 {
		t.Errorf("empty slice: got %v", got)
	}
	if got := valutil.SliceOrDefault([]int{2, 3}, []int{1}); len(got) != 2 {
		t.Errorf("set slice: got %v", got)
	}
	if got := valutil.MapOrDefault(nil, map[string]int{"a": 1}); len(got) != 1 {
		t.Errorf("nil map: got %v", got)
	}
	if got := valutil.MapOrDefault(map[string]int{}, map[string]int{"a": 1}); got == nil || len(got) != 0 {
		t.Errorf("empty non-nil map replaced: got %v", got)
	}
}
