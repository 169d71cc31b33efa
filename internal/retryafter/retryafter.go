// Package retryafter reads how long a service that refused a call asks
// its callers to wait: Azure's and OpenAI's retry-after-ms, else the
// standard Retry-After, in seconds or as an HTTP date.
package retryafter

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// Max is the longest wait a hint is read as. A service may say anything
// (retry-after-ms: 1e30, Retry-After: 99999999999): beyond a day it is not
// a wait anyone will honour, and it must not overflow into a negative one.
const Max = 24 * time.Hour

// Parse returns the wait h asks for, at most Max, and whether it asks
// for one; now dates an HTTP-date hint.
func Parse(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsNaN(ms) {
			return capped(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || math.IsNaN(s) {
			return 0, false
		}
		return capped(s * float64(time.Second)), true
	}
	if at, err := http.ParseTime(v); err == nil {
		return min(max(at.Sub(now), 0), Max), true
	}
	return 0, false
}

// capped is ns nanoseconds as a Duration, at most Max.
func capped(ns float64) time.Duration {
	if ns >= float64(Max) {
		return Max
	}
	return time.Duration(ns)
}
