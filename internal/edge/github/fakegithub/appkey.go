package fakegithub

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"sync"
)

var appKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// AppKey is a GitHub App private key for tests (one per process: generating one takes a while), with its PEM
// form as GitHub hands it out. Give the fake its public half with WithApp.
func AppKey() (*rsa.PrivateKey, []byte) {
	k := appKey()
	return k, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}
