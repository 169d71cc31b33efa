package retryafter

import (
	"net/http"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		header map[string]string
		want   time.Duration
		asked  bool
	}{
		{"none", nil, 0, false},
		{"milliseconds", map[string]string{"retry-after-ms": "1500"}, 1500 * time.Millisecond, true},
		{"milliseconds win over seconds", map[string]string{"retry-after-ms": "40", "Retry-After": "7"}, 40 * time.Millisecond, true},
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second, true},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{"an hour", map[string]string{"Retry-After": "3600"}, time.Hour, true},
		{"a date", map[string]string{"Retry-After": now.Add(20 * time.Second).Format(http.TimeFormat)}, 20 * time.Second, true},
		{"a date past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0, true},
		{"a date far ahead", map[string]string{"Retry-After": now.AddDate(5, 0, 0).Format(http.TimeFormat)}, Max, true},
		// Absurd hints saturate; they never overflow into a negative wait.
		{"1e30 milliseconds", map[string]string{"retry-after-ms": "1e30"}, Max, true},
		{"99999999999 seconds", map[string]string{"Retry-After": "99999999999"}, Max, true},
		{"infinite milliseconds", map[string]string{"retry-after-ms": "Inf"}, Max, true},
		{"negative seconds", map[string]string{"Retry-After": "-5"}, 0, false},
		{"NaN milliseconds, no seconds", map[string]string{"retry-after-ms": "NaN"}, 0, false},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range c.header {
				h.Set(k, v)
			}
			got, asked := Parse(h, now)
			if got != c.want || asked != c.asked || got < 0 {
				t.Errorf("Parse = %v, %v; want %v, %v", got, asked, c.want, c.asked)
			}
		})
	}
}
