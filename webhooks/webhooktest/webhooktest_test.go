package webhooktest

import "testing"

func TestSign(t *testing.T) {
	for _, tc := range []struct {
		secret, body, want string
	}{
		// GitHub's own example (docs: "Validating webhook deliveries", "Testing the webhook payload validation").
		{"It's a Secret to Everybody", "Hello, World!", "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"},
		// The same body under another secret signs differently.
		{"another secret", "Hello, World!", ""},
	} {
		got := Sign(tc.secret, []byte(tc.body))
		switch {
		case tc.want != "" && got != tc.want:
			t.Errorf("Sign(%q, %q) = %s, want %s", tc.secret, tc.body, got, tc.want)
		case tc.want == "" && got == Sign("It's a Secret to Everybody", []byte(tc.body)):
			t.Errorf("Sign(%q, %q) is the signature under another secret", tc.secret, tc.body)
		}
	}
}
