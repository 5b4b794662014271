// Package extras holds a test that runs an unchanged controller-runtime envtest.Environment on
// faultline's envtest drop-in with its opt-in extras (docs/go.md).
package extras
