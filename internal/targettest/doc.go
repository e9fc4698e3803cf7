// Package targettest holds the test support shared by the tests of
// evalrun's targets (target, openai): a fake HTTP server that serves a
// sequence of handlers and records the requests, handlers that fail the way
// servers and networks do (hang, reset the connection), a fake clock, and a
// harness that runs a target's call under a retry policy. Only tests import
// it.
package targettest
