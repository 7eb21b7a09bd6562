//go:build race

package test

// raceEnabled is true in a -race build: load tests then shrink and assert
// correctness only (the race detector slows the load generator 5–10×).
const raceEnabled = true
