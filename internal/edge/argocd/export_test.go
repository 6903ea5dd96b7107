package argocd

// DecodeJSON exposes decodeJSON to the external tests.
var DecodeJSON = decodeJSON

// ParseEvent exposes parseEvent to the external tests.
func ParseEvent(msg []byte) (*Event, error) {
	ev, _, err := parseEvent(msg)
	return ev, err
}
