package recorder

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// Redacted replaces every secret the recorder removes.
const Redacted = "[REDACTED]"

// MinSecretLen is the shortest configured secret the Redactor replaces:
// shorter values would mangle ordinary text and are no real secret.
const MinSecretLen = 8

// sigParam matches the signature of a SAS URL (sig=...), in a query string
// or anywhere in a body (where JSON encoders may write the & before it as
// \u0026), up to the next delimiter.
var sigParam = regexp.MustCompile(`(?i)(\\u0026|\b)sig=[^&\s"'\\<>]+`)

// Redactor removes secrets from what the recorder writes: secret headers,
// SAS signatures, values of secret-named JSON keys, and configured secret
// values (such as a static bearer token) wherever they appear.
type Redactor struct {
	secrets [][]byte // raw and JSON-escaped forms, longest first
}

// NewRedactor returns a Redactor for the given secret values; empty values
// and values shorter than MinSecretLen are ignored.
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	add := func(s string) {
		if len(s) >= MinSecretLen && !seen[s] {
			seen[s] = true
			r.secrets = append(r.secrets, []byte(s))
		}
	}
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		add(s)
		if q, err := json.Marshal(s); err == nil {
			add(string(q[1 : len(q)-1])) // as it appears inside a JSON string
		}
	}
	slices.SortFunc(r.secrets, func(a, b []byte) int { return len(b) - len(a) })
	return r
}

// secretHeaders are headers whose whole value is a credential.
var secretHeaders = map[string]bool{
	"authorization":             true,
	"proxy-authorization":       true,
	"cookie":                    true,
	"set-cookie":                true,
	"api-key":                   true,
	"x-api-key":                 true,
	"ocp-apim-subscription-key": true,
	"x-functions-key":           true,
}

// SecretHeader reports whether a header's value is a credential.
func SecretHeader(name string) bool {
	n := strings.ToLower(name)
	if secretHeaders[n] {
		return true
	}
	for _, suffix := range []string{"-key", "-token", "-secret", "-signature", "-password"} {
		if strings.HasSuffix(n, suffix) {
			return true
		}
	}
	return strings.Contains(n, "apikey") || strings.Contains(n, "api-key")
}

// secretKeys are JSON object keys (lower case, without - and _) whose
// string values are credentials.
var secretKeys = map[string]bool{
	"apikey": true, "key": true, "secret": true, "clientsecret": true, "password": true,
	"token": true, "accesstoken": true, "refreshtoken": true, "idtoken": true,
	"sastoken": true, "accountkey": true, "connectionstring": true,
	"authorization": true, "subscriptionkey": true, "sig": true, "signature": true,
}

func secretKey(k string) bool {
	k = strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(k))
	return secretKeys[k]
}

// String redacts configured secrets and SAS signatures in s.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	return string(r.Bytes([]byte(s)))
}

// Bytes redacts configured secrets and SAS signatures in b. It returns b
// itself when there is nothing to redact.
func (r *Redactor) Bytes(b []byte) []byte {
	for _, sec := range r.secrets {
		if bytes.Contains(b, sec) {
			b = bytes.ReplaceAll(b, sec, []byte(Redacted))
		}
	}
	if sigParam.Match(b) {
		b = sigParam.ReplaceAll(b, []byte("${1}sig="+Redacted))
	}
	return b
}

// Header redacts one header value.
func (r *Redactor) Header(name, value string) string {
	if SecretHeader(name) {
		return Redacted
	}
	return r.String(value)
}

// JSON redacts a JSON value: the string values of secret-named keys, then
// configured secrets and SAS signatures anywhere in it. The value keeps its
// bytes when no key needed redacting.
func (r *Redactor) JSON(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return v
	}
	var x any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if dec.Decode(&x) == nil && redactKeys(x) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if enc.Encode(x) == nil {
			v = bytes.TrimSpace(buf.Bytes())
		}
	}
	return r.Bytes(v)
}

// redactKeys replaces the string values of secret-named keys in place and
// reports whether it replaced any.
func redactKeys(x any) bool {
	changed := false
	switch v := x.(type) {
	case map[string]any:
		for k, val := range v {
			if s, ok := val.(string); ok && s != "" && secretKey(k) {
				v[k] = Redacted
				changed = true
				continue
			}
			changed = redactKeys(val) || changed
		}
	case []any:
		for _, e := range v {
			changed = redactKeys(e) || changed
		}
	}
	return changed
}

// Fixture redacts a fixture in place, everywhere a secret could be.
func (r *Redactor) Fixture(fx *Fixture) {
	fx.Description = r.String(fx.Description)
	c := &fx.Capture
	c.Text = r.String(c.Text)
	if c.FollowUp != nil {
		c.FollowUp.Item.RawText = r.String(c.FollowUp.Item.RawText)
		c.FollowUp.Item.Title = r.String(c.FollowUp.Item.Title)
	}
	if c.Audio != nil {
		c.Audio.Filename = r.String(c.Audio.Filename)
	}
	for i := range fx.Exchanges {
		ex := &fx.Exchanges[i]
		ex.Error = r.String(ex.Error)
		rq := &ex.Request
		rq.Path = r.String(rq.Path)
		for k, v := range rq.Query {
			if secretKey(k) || SecretHeader(k) {
				rq.Query[k] = Redacted
				continue
			}
			rq.Query[k] = r.String(v)
		}
		for k, v := range rq.Header {
			rq.Header[k] = r.Header(k, v)
		}
		rq.Body = r.JSON(rq.Body)
		rq.BodyText = r.String(rq.BodyText)
		if rs := ex.Response; rs != nil {
			for k, v := range rs.Header {
				rs.Header[k] = r.Header(k, v)
			}
			rs.Body = r.JSON(rs.Body)
			rs.BodyText = r.String(rs.BodyText)
			for j := range rs.Events {
				ev := &rs.Events[j]
				ev.Data = r.JSON(ev.Data)
				ev.DataText = r.String(ev.DataText)
				if ev.DataBase64 != "" {
					*ev = NewEvent(ev.Ms, ev.Name, r.Bytes(ev.Payload()))
				}
			}
			if p := rs.PartialBytes(); len(p) > 0 {
				rs.Partial, rs.PartialBase64 = "", ""
				rs.setPartial(r.Bytes(p))
			}
			rs.Error = r.String(rs.Error)
		}
	}
	for i := range fx.Tools {
		t := &fx.Tools[i]
		t.Arguments = r.JSON(t.Arguments)
		t.ArgumentsText = r.String(t.ArgumentsText)
		t.Output = r.JSON(t.Output)
		t.OutputText = r.String(t.OutputText)
	}
	fx.Result.Error = r.String(fx.Result.Error)
}

// Leaks reports whether b still holds a configured secret; a last check
// before anything is written.
func (r *Redactor) Leaks(b []byte) bool {
	for _, sec := range r.secrets {
		if bytes.Contains(b, sec) {
			return true
		}
	}
	return false
}
