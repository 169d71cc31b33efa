package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
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

// Why a request is refused: the details of its 401.
var (
	errNoKey        = errors.New("Invalid or missing API key")
	errKeysDisagree = errors.New("the request carries different API keys (X-API-Key and Authorization: Bearer): send one key")
)

// user returns the user id the request's API key acts for. The key is in
// X-API-Key or Authorization: Bearer; a request may carry it in both, or
// more than once, but every copy must be the same key: keys that
// disagree are refused, not resolved in favour of one of them.
func (a *authenticator) user(r *http.Request) (string, error) {
	var keys []string
	for _, v := range r.Header.Values("X-API-Key") {
		if v = strings.TrimSpace(v); v != "" {
			keys = append(keys, v)
		}
	}
	for _, auth := range r.Header.Values("Authorization") {
		if len(auth) > 7 && strings.EqualFold(auth[:7], "Bearer ") {
			if v := strings.TrimSpace(auth[7:]); v != "" {
				keys = append(keys, v)
			}
		}
	}
	if len(keys) == 0 {
		return "", errNoKey
	}
	h := sha256.Sum256([]byte(keys[0]))
	for _, k := range keys[1:] {
		if other := sha256.Sum256([]byte(k)); subtle.ConstantTimeCompare(h[:], other[:]) != 1 {
			return "", errKeysDisagree
		}
	}
	match := -1
	for i := range a.hashes {
		if subtle.ConstantTimeCompare(h[:], a.hashes[i][:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return "", errNoKey
	}
	return a.users[match], nil
}
