//go:build !linux

package loadgen

import "errors"

const wireSupported = false

func runWire(Config) (Result, error) {
	return Result{}, errors.New("loadgen: the wire client needs Linux")
}
