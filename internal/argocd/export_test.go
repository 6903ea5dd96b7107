package argocd

// DecodeJSON exposes decodeJSON to the external tests.
var DecodeJSON = decodeJSON
