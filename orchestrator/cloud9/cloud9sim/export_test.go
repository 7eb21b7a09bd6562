package cloud9sim

// Run is Main with a context instead of signals, for tests.
var Run = run
