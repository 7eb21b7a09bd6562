// Package valutil is the one way a config struct fills in its defaults:
// each package's withDefaults method assigns every field from one of these
// helpers, so the rule for a field (zero, non-positive, nil, empty) is read
// in its name. It imports only the standard library.
package valutil

import (
	"cmp"
	"reflect"
)

// Number is the numeric kinds PositiveOrDefault takes (time.Duration
// included).
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr |
		~float32 | ~float64
}

// ValOrDefault returns val, or def when val is its type's zero value (0,
// "", nil pointer or interface, a zero struct). It is cmp.Or of the two,
// named as its siblings are. A negative number is kept: use
// PositiveOrDefault where a field defaults when <= 0.
func ValOrDefault[T comparable](val, def T) T {
	return cmp.Or(val, def)
}

// ValOrDefaultFunc returns val, or def() when val is its type's zero value:
// for a default that is costly or does I/O, which then runs only when
// needed.
func ValOrDefaultFunc[T comparable](val T, def func() T) T {
	var zero T
	if val == zero {
		return def()
	}
	return val
}

// PositiveOrDefault returns val, or def when val <= 0: zero and negative
// values both take the default.
func PositiveOrDefault[T Number](val, def T) T {
	if val <= 0 {
		return def
	}
	return val
}

// FuncOrDefault returns fn, or def when fn is nil: the default of a func
// field (Now func() time.Time, a Sleep, an id generator), which == cannot
// compare. F must be a func type; any other type panics, which a package's
// first test shows.
func FuncOrDefault[F any](fn, def F) F {
	v := reflect.ValueOf(&fn).Elem()
	if v.Kind() != reflect.Func {
		panic("valutil.FuncOrDefault: " + v.Type().String() + " is not a func type")
	}
	if v.IsNil() {
		return def
	}
	return fn
}

// SliceOrDefault returns s, or def when s is empty (nil or length 0).
func SliceOrDefault[S ~[]E, E any](s, def S) S {
	if len(s) == 0 {
		return def
	}
	return s
}

// MapOrDefault returns m, or def when m is nil; an empty non-nil map is
// kept.
func MapOrDefault[M ~map[K]V, K comparable, V any](m, def M) M {
	if m == nil {
		return def
	}
	return m
}
