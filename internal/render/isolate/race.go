//go:build race

package isolate

// raceEnabled: the race detector's runtime maps its shadow memory as it goes, at addresses of its choosing; an
// address-space cap makes it fail ("too many address space collisions"). Race-enabled builds (tests) rely on the
// heap watch and the time cap alone.
const raceEnabled = true
