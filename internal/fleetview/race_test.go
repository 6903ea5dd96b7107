//go:build race

package fleetview

// raceEnabled: under the race detector (several times slower) the timing tests log their figures and do not
// hold them to their bounds.
const raceEnabled = true
