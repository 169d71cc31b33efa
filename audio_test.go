package brainwire_test

import (
	"testing"

	"github.com/brainwire/brainwire"
)

func TestAudioFormat(t *testing.T) {
	for _, tc := range []struct {
		filename, contentType string
		wantName, wantType    string // empty: rejected
	}{
		{"memo.m4a", "audio/x-m4a", "memo.m4a", "audio/x-m4a"},
		{"memo.M4A", "", "memo.M4A", "audio/mp4"},
		{"recording", "audio/webm;codecs=opus", "recording.webm", "audio/webm;codecs=opus"},
		{"", "audio/wav", "audio.wav", "audio/wav"},
		{"dir/sub/clip.ogg", "application/octet-stream", "clip.ogg", "audio/ogg"},
		{`C:\Users\me\clip.flac`, "", "clip.flac", "audio/flac"},
		{"a.wav", "text/plain", "a.wav", "audio/wav"},
		{"voice.mp3", "audio/mpeg", "voice.mp3", "audio/mpeg"},
		{"v.mpga", "", "v.mpga", "audio/mpeg"},
		{"v.oga", "", "v.oga", "audio/ogg"},
		{"v.mp4", "video/mp4", "v.mp4", "video/mp4"},
		{"v.mpeg", "", "v.mpeg", "audio/mpeg"},
		{`say "hi".wav`, "audio/wav", `say "hi".wav`, "audio/wav"},
		{"notes.txt", "text/plain", "", ""},
		{"clip.aac", "audio/aac", "", ""},
		{"clip.wma", "audio/x-ms-wma", "", ""},
		{"clip", "", "", ""},
		{"clip.wav", "audio/", "", ""},
	} {
		name, ctype, err := brainwire.AudioFormat(tc.filename, tc.contentType)
		if tc.wantName == "" {
			if brainwire.ErrorCode(err) != brainwire.EInvalid {
				t.Errorf("AudioFormat(%q, %q): err = %v, want code %s", tc.filename, tc.contentType, err, brainwire.EInvalid)
			}
			continue
		}
		if err != nil {
			t.Errorf("AudioFormat(%q, %q): %v", tc.filename, tc.contentType, err)
			continue
		}
		if name != tc.wantName || ctype != tc.wantType {
			t.Errorf("AudioFormat(%q, %q) = %q, %q; want %q, %q", tc.filename, tc.contentType,
				name, ctype, tc.wantName, tc.wantType)
		}
	}
}

func TestCheckBlobPut(t *testing.T) {
	for _, tc := range []struct {
		name, contentType string
		want              string // empty: EInvalid
	}{
		{"a.wav", "audio/wav", "audio/wav"},
		{"a.webm", "audio/webm;codecs=opus", "audio/webm;codecs=opus"},
		{"a.bin", "", brainwire.DefaultBlobContentType},
		{"a.wav", "audio/", ""},
		{"../a.wav", "audio/wav", ""},
		{"", "", ""},
	} {
		got, err := brainwire.CheckBlobPut(tc.name, tc.contentType)
		if tc.want == "" {
			if brainwire.ErrorCode(err) != brainwire.EInvalid {
				t.Errorf("CheckBlobPut(%q, %q): err = %v, want code %s", tc.name, tc.contentType, err, brainwire.EInvalid)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("CheckBlobPut(%q, %q) = %q, %v; want %q", tc.name, tc.contentType, got, err, tc.want)
		}
	}
}

func TestIsAudio(t *testing.T) {
	wav := "RIFF\x24\x00\x00\x00WAVEfmt "
	elf := "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00"
	for _, c := range []struct {
		format, head string
		want         bool
	}{
		{"wav", wav, true},
		{"wav", "RIFF\x24\x00\x00\x00AVI LIST", false},
		{"wav", elf, false},
		{"wav", "RIFF", false},
		{"flac", "fLaC\x00\x00\x00\x22", true},
		{"mp3", "ID3\x04\x00\x00\x00\x00\x00\x00", true},
		{"mp3", "\xff\xfb\x90\x64\x00\x00", true},
		{"mpga", "\xff\xf3\x48\xc4", true},
		{"mp3", wav, false},
		{"mpeg", "\x00\x00\x01\xba\x44\x00", true},
		{"m4a", "\x00\x00\x00\x20ftypM4A ", true},
		{"mp4", "\x00\x00\x00\x18ftypmp42", true},
		{"m4a", "ftyp", false},
		{"ogg", "OggS\x00\x02", true},
		{"oga", "OggS\x00\x02", true},
		{"ogg", "Ogg", false},
		{"webm", "\x1a\x45\xdf\xa3\x9f\x42", true},
		{"webm", elf, false},
		{"txt", "hello", false},
		{"wav", "", false},
	} {
		if got := brainwire.IsAudio(c.format, []byte(c.head)); got != c.want {
			t.Errorf("IsAudio(%s, %q) = %v, want %v", c.format, c.head, got, c.want)
		}
	}
}
