package server

import (
	"net/http"
	"testing"
)

func TestParseKeys(t *testing.T) {
	keys, err := ParseKeys(" key-aaaaaaaaaaaaaaaa:alice , key-bbbbbbbbbbbbbbbb ,")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys["key-aaaaaaaaaaaaaaaa"] != "alice" || keys["key-bbbbbbbbbbbbbbbb"] != "default" {
		t.Fatalf("keys %v", keys)
	}
	for _, bad := range []string{"", " , ", "short:alice"} {
		if _, err := ParseKeys(bad); err == nil {
			t.Errorf("ParseKeys(%q) accepted", bad)
		}
	}
}

func TestAuthenticatorMapsKeysToUsers(t *testing.T) {
	a := newAuthenticator(Keys{"key-aaaaaaaaaaaaaaaa": "alice", "key-bbbbbbbbbbbbbbbb": "bob"})
	for _, c := range []struct {
		header, value, user string
		ok                  bool
	}{
		{"Authorization", "Bearer key-aaaaaaaaaaaaaaaa", "alice", true},
		{"Authorization", "bearer key-bbbbbbbbbbbbbbbb", "bob", true},
		{"X-API-Key", "key-bbbbbbbbbbbbbbbb", "bob", true},
		{"Authorization", "Basic key-aaaaaaaaaaaaaaaa", "", false},
		{"Authorization", "Bearer ", "", false},
		{"X-API-Key", "key-aaaaaaaaaaaaaaa", "", false},
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		r.Header.Set(c.header, c.value)
		user, err := a.user(r)
		if ok := err == nil; user != c.user || ok != c.ok {
			t.Errorf("%s: %q -> (%q, %v)", c.header, c.value, user, ok)
		}
	}
}
