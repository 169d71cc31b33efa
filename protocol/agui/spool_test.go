package agui

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/brainwire/brainwire"
)

func audioInput(earlier, value string) string {
	return `{"threadId":"t","runId":"r","messages":[` + earlier + `{"id":"u","role":"user","content":[{"type":"audio",` +
		`"source":{"type":"data","mimeType":"audio/wav","value":"` + value + `"}}]}],"forwardedProps":{}}`
}

// The inline audio goes to the spool as it is read, not to the JSON that
// is parsed: an input whose audio is 64 times the conversation's limit
// is taken, and the spool holds the audio, decoded through the escapes
// and line breaks JSON and base64 allow, with or without padding.
func TestReadInputSpoolsTheAudio(t *testing.T) {
	wav := bytes.Repeat([]byte("RIFF\x00\x01\x02\xff"), 8<<10) // 64 KiB
	b64 := base64.StdEncoding.EncodeToString(wav)
	for name, value := range map[string]string{
		"plain":              b64,
		"escaped slashes":    strings.ReplaceAll(b64, "/", `\/`),
		"lines of 76":        lines(b64, 76, `\r\n`),
		"unicode escapes":    `\u0041\u0041` + b64[2:],
		"without padding":    strings.TrimRight(base64.StdEncoding.EncodeToString(wav[:len(wav)-1]), "="),
		"earlier audio left": b64,
	} {
		t.Run(name, func(t *testing.T) {
			want := wav
			if name == "unicode escapes" {
				want, _ = base64.StdEncoding.DecodeString("AA" + b64[2:])
			}
			if name == "without padding" {
				want = wav[:len(wav)-1]
			}
			earlier := ""
			if name == "earlier audio left" {
				// An earlier message's audio, over the audio limit: not the
				// capture's, so not refused.
				earlier = `{"id":"u0","role":"user","content":[{"type":"audio","source":{"type":"data","value":"` +
					base64.StdEncoding.EncodeToString(make([]byte, 100<<10)) + `"}}]},`
			}
			spool := &MemSpool{}
			in, err := ReadInput(strings.NewReader(audioInput(earlier, value)), spool, Limits{JSON: 1 << 10, Audio: 80 << 10})
			if err != nil {
				t.Fatal(err)
			}
			if got := bytesOf(in.Audio.Data); !bytes.Equal(got, want) {
				t.Fatalf("audio of %d bytes, want %d", len(got), len(want))
			}
		})
	}
}

func lines(s string, n int, sep string) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n] + sep)
		s = s[n:]
	}
	b.WriteString(s)
	return b.String()
}

// ReadInput's own refusals: a conversation over its limit, the capture's
// audio over its limit, a deep nest, a body cut short; and a reader that
// fails is its caller's to name.
func TestReadInputRefuses(t *testing.T) {
	wav := base64.StdEncoding.EncodeToString(make([]byte, 2048))
	lim := Limits{JSON: 1 << 10, Audio: 1 << 10}
	for _, c := range []struct {
		name, body, code, want string
	}{
		{"conversation over its limit", audioInput(`{"role":"assistant","content":"`+strings.Repeat("x", 2<<10)+`"},`, "AAAA"), brainwire.ETooLarge, "over 1024 bytes besides its audio"},
		{"the capture's audio over its limit", audioInput("", wav), brainwire.ETooLarge, "audio is over 1024 bytes"},
		{"nested too deep", strings.Repeat("[", 20000), brainwire.EInvalid, "max depth"},
		{"cut short in the audio", audioInput("", wav)[:200], brainwire.EInvalid, "unexpected end"},
		{"not base64", audioInput("", "AA!A"), brainwire.EInvalid, "not base64"},
		{"trailing data", audioInput("", "AAAA") + "x", brainwire.EInvalid, "after top-level value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lim := lim
			if c.code == brainwire.EInvalid {
				lim.JSON = 0
			}
			_, err := ReadInput(strings.NewReader(c.body), &MemSpool{}, lim)
			if brainwire.ErrorCode(err) != c.code || !strings.Contains(brainwire.ErrorMessage(err), c.want) {
				t.Fatalf("error %v, want %s containing %q", err, c.code, c.want)
			}
		})
	}
	broken := errors.New("connection reset")
	_, err := ReadInput(io.MultiReader(strings.NewReader(audioInput("", wav)[:100]), iotest.ErrReader(broken)), &MemSpool{}, lim)
	var re *ReadError
	if !errors.As(err, &re) || !errors.Is(err, broken) {
		t.Fatalf("a failing reader: %v", err)
	}
}

// A conversation of many keys costs memory in proportion to its size: the
// scanner once copied all its output so far for every key it read, 6.9 s
// and gigabytes for 650 KB of state with 60,000 keys.
func TestReadInputManyKeysStaysLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"threadId":"t","runId":"r","state":{`)
	for i := range 60000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":1`, i)
	}
	b.WriteString(`},"messages":[{"id":"u","role":"user","content":"hi"}]}`)
	body := b.String()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := ReadInput(strings.NewReader(body), &MemSpool{}, Limits{JSON: 1 << 20, Audio: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	// Parsing the state into maps takes some tens of bytes per byte; the
	// quadratic copy took thousands.
	if got, most := after.TotalAlloc-before.TotalAlloc, uint64(100*len(body)); got > most {
		t.Errorf("reading %d bytes of JSON allocated %d bytes, want at most %d", len(body), got, most)
	}
}
