package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"
)

// Keys maps API keys to the user ids they act for (the partition key).
type Keys map[string]string

// ParseKeys reads `key` or `key:userId` entries separated by commas. A key
// without a user id acts for the user "default".
func ParseKeys(s string) (Keys, error) {
	keys := Keys{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, user, ok := strings.Cut(part, ":")
		key, user = strings.TrimSpace(key), strings.TrimSpace(user)
		if !ok || user == "" {
			user = "default"
		}
		if len(key) < 16 {
			return nil, fmt.Errorf("api key %q…: keys must be at least 16 characters", key[:min(len(key), 4)])
		}
		keys[key] = user
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no api keys in %q", s)
	}
	return keys, nil
}

// authenticator checks API keys in constant time: every request hashes the
// presented key and compares it against every configured key, so neither
// the length nor which key matched leaks through timing.
type authenticator struct {
	hashes [][32]byte
	users  []string
}

func newAuthenticator(keys Keys) *authenticator {
	a := &authenticator{}
	for k, u := range keys {
		a.hashes = append(a.hashes, sha256.Sum256([]byte(k)))
		a.users = append(a.users, u)
	}
	return a
}

func (a *authenticator) user(r *http.Request) (string, bool) {
	key := r.Header.Get("X-API-Key")
	if key == "" {
		auth := r.Header.Get("Authorization")
		if len(auth) > 7 && strings.EqualFold(auth[:7], "Bearer ") {
			key = strings.TrimSpace(auth[7:])
		}
	}
	if key == "" {
		return "", false
	}
	h := sha256.Sum256([]byte(key))
	match := -1
	for i := range a.hashes {
		if subtle.ConstantTimeCompare(h[:], a.hashes[i][:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return "", false
	}
	return a.users[match], true
}
