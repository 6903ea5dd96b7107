package ocitest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	// distribution's token access controller registers itself as the "token" auth.
	_ "github.com/distribution/distribution/v3/registry/auth/token"
)

// tokenPath is where a NewTokenAuth registry's token service answers.
const tokenPath = "/token"

// tokenTTL is how long an issued token is valid.
const tokenTTL = 5 * time.Minute

// newSigner makes the ES256 key that signs the tokens and returns its public half as the JWKS the access
// controller trusts (by key id: distribution's token.VerifySigningKey).
func (r *Registry) newSigner() ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: tokenKeyID}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, err
	}
	r.signer = signer
	return json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: tokenKeyID, Algorithm: string(jose.ES256), Use: "sig"}}})
}

// resourceActions is one entry of a token's access claim (distribution's token.ResourceActions).
type resourceActions struct {
	Type    string   `json:"type"`
	Name    string   `json:"name"`
	Actions []string `json:"actions"`
}

// serveToken is the token service: GET with basic auth (https://distribution.github.io/distribution/spec/auth/token/)
// or POST with an OAuth2 password grant (…/spec/auth/oauth/); the right username and password get a token for the
// requested scopes, anything else 401.
func (r *Registry) serveToken(w http.ResponseWriter, req *http.Request) {
	var user, pass, service string
	var scopes []string
	switch req.Method {
	case http.MethodGet:
		user, pass, _ = req.BasicAuth()
		service, scopes = req.URL.Query().Get("service"), req.URL.Query()["scope"]
	case http.MethodPost:
		if err := req.ParseForm(); err != nil || req.PostForm.Get("grant_type") != "password" {
			http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
			return
		}
		user, pass, service = req.PostForm.Get("username"), req.PostForm.Get("password"), req.PostForm.Get("service")
		scopes = strings.Fields(req.PostForm.Get("scope"))
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if subtle.ConstantTimeCompare([]byte(user), []byte(r.Username)) != 1 || subtle.ConstantTimeCompare([]byte(pass), []byte(r.Password)) != 1 {
		w.Header().Set("WWW-Authenticate", `Basic realm="fleetwave-test-token"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`))
		return
	}
	if service != tokenService {
		http.Error(w, `{"errors":[{"code":"DENIED","message":"unknown service"}]}`, http.StatusBadRequest)
		return
	}
	access := []resourceActions{}
	for _, scope := range scopes {
		// type:name:actions, the name may hold a port (registry:catalog:*, repository:charts/web:pull,push)
		i, j := strings.Index(scope, ":"), strings.LastIndex(scope, ":")
		if i < 0 || i == j {
			continue
		}
		access = append(access, resourceActions{Type: scope[:i], Name: scope[i+1 : j], Actions: strings.Split(scope[j+1:], ",")})
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	now := time.Now()
	tok, err := jwt.Signed(r.signer).Claims(jwt.Claims{
		Issuer: tokenIssuer, Subject: user, Audience: jwt.Audience{tokenService}, ID: hex.EncodeToString(id),
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)), Expiry: jwt.NewNumericDate(now.Add(tokenTTL)),
	}).Claims(map[string]any{"access": access}).Serialize()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	r.mu.Lock()
	r.tokens[tok] = true
	r.counts["token"]++
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"token": tok, "access_token": tok, "expires_in": int(tokenTTL / time.Second), "issued_at": now.UTC().Format(time.RFC3339)})
}

// realmWriter writes the bearer challenge's realm on the host the client asked for (the registry's, as a registry
// behind its own name advertises its token service): clients refuse a realm on a loopback or private address other
// than the registry's host (oras-go v2.6.2 auth validateRealm), and the tests reach the registry as 127.0.0.1 and as
// localhost.
type realmWriter struct {
	http.ResponseWriter
	realm, host string
}

func (w *realmWriter) WriteHeader(code int) {
	if ch := w.Header().Get("WWW-Authenticate"); ch != "" && w.host != "" {
		if u, err := url.Parse(w.realm); err == nil {
			u.Host = w.host
			w.Header().Set("WWW-Authenticate", strings.Replace(ch, `realm="`+w.realm+`"`, `realm="`+u.String()+`"`, 1))
		}
	}
	w.ResponseWriter.WriteHeader(code)
}
