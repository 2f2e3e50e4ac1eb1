// Package childproc holds what the tests of every module need when they
// start a long-lived process of their own (a redis-server, a hotlimitd, a
// reference server): attributes that keep it from outliving the test
// binary.
//
// A test binary that dies without running its cleanups (a -timeout panic, a
// SIGKILL, a fuzz worker that exits or that the fuzzing coordinator stops)
// would otherwise leave its servers running, holding their ports and any
// descriptors they inherited: a fuzz worker's pipes to its coordinator,
// which then waits for them to close and never reports the input that ended
// the worker.
package childproc
