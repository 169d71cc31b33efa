package brainwire

import (
	"context"
	"io"
	"mime"
	"path"
	"strings"
)

// BlobStore keeps uploaded audio for the length of its capture. Names are
// chosen by the caller; URLs are what the transcribe_audio tool is given.
type BlobStore interface {
	// Put stores the audio and returns the URL the tool will fetch it by.
	Put(ctx context.Context, name, contentType string, r io.Reader) (url string, err error)
	// Open returns the audio stored at url (as returned by Put).
	Open(ctx context.Context, url string) (io.ReadCloser, BlobInfo, error)
	// Delete removes the audio; deleting a missing blob is not an error.
	Delete(ctx context.Context, url string) error
}

// BlobInfo describes a stored blob.
type BlobInfo struct {
	Name        string
	ContentType string
	Size        int64
}

// Transcriber turns speech into text. audio may be an AudioBlob, which
// a Transcriber can send as it reads it instead of holding it whole.
type Transcriber interface {
	Transcribe(ctx context.Context, audio io.Reader, filename, contentType string) (string, error)
}

// AudioBlob is audio read from a blob store: its size is known before it
// is read, and Reopen reads it again from the start, by opening the blob
// again, for a request that must send it twice (after a redirect or a
// lost connection). Memory then does not grow with the file's size.
type AudioBlob interface {
	io.Reader
	Size() int64
	Reopen() (io.ReadCloser, error)
}

// MaxAudioBytes is the largest audio file a capture may carry: the
// transcription service's limit of 25 MB, counted as the service counts
// them (26,214,400 bytes). Uploads are refused above it rather than
// stored and then refused by the service.
const MaxAudioBytes = 25 << 20

// MaxBlobNameLen bounds blob names.
const MaxBlobNameLen = 200

// DefaultBlobContentType is what a blob put with no content type is stored
// and opened as.
const DefaultBlobContentType = "application/octet-stream"

// CheckBlobPut checks the name and content type a BlobStore's Put is given,
// before anything is stored (EInvalid if either is malformed), and returns
// the content type to store: DefaultBlobContentType when none was given.
func CheckBlobPut(name, contentType string) (string, error) {
	if err := ValidBlobName(name); err != nil {
		return "", err
	}
	if contentType == "" {
		return DefaultBlobContentType, nil
	}
	if _, _, err := mime.ParseMediaType(contentType); err != nil {
		return "", Errorf(EInvalid, "invalid content type %q", contentType)
	}
	return contentType, nil
}

// ValidBlobName accepts names of ASCII letters, digits, '.', '_' and '-'
// that start with a letter or digit and contain no "..": one plain file on
// every file system and a URL path segment that needs no escaping, so a
// name valid on one blob store is valid on the others.
func ValidBlobName(name string) error {
	if name == "" || len(name) > MaxBlobNameLen {
		return Errorf(EInvalid, "blob name must be 1 to %d characters", MaxBlobNameLen)
	}
	alnum := func(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }
	if !alnum(name[0]) || strings.Contains(name, "..") {
		return Errorf(EInvalid, "invalid blob name %q", name)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !alnum(c) && c != '.' && c != '_' && c != '-' {
			return Errorf(EInvalid, "invalid blob name %q", name)
		}
	}
	return nil
}

// audioFormats lists the file extensions the transcription service takes.
var audioFormats = []string{"flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm"}

// audioFormatTypes maps each format to the content type sent for it when the
// upload named none (or only application/octet-stream).
var audioFormatTypes = map[string]string{
	"flac": "audio/flac",
	"m4a":  "audio/mp4",
	"mp3":  "audio/mpeg",
	"mp4":  "audio/mp4",
	"mpeg": "audio/mpeg",
	"mpga": "audio/mpeg",
	"oga":  "audio/ogg",
	"ogg":  "audio/ogg",
	"wav":  "audio/wav",
	"webm": "audio/webm",
}

// audioTypeFormats maps the content types phones and browsers give audio to a
// format, for uploads whose file name has no usable extension.
var audioTypeFormats = map[string]string{
	"audio/flac":      "flac",
	"audio/x-flac":    "flac",
	"audio/m4a":       "m4a",
	"audio/x-m4a":     "m4a",
	"audio/mp4":       "m4a",
	"video/mp4":       "mp4",
	"audio/mpeg":      "mp3",
	"audio/mp3":       "mp3",
	"audio/mpga":      "mpga",
	"video/mpeg":      "mpeg",
	"audio/ogg":       "ogg",
	"application/ogg": "ogg",
	"audio/wav":       "wav",
	"audio/wave":      "wav",
	"audio/x-wav":     "wav",
	"audio/vnd.wave":  "wav",
	"audio/webm":      "webm",
	"video/webm":      "webm",
}

// AudioFormat checks that an upload is in a format the transcription
// service takes (EInvalid if not) and returns the file name and content
// type to store and send it under. The service goes by the file name's
// extension, so one is added when only the content type tells the format.
func AudioFormat(filename, contentType string) (string, string, error) {
	name := path.Base(strings.ReplaceAll(filename, `\`, "/"))
	if name == "." || name == "/" {
		name = "audio"
	}
	mediaType := ""
	if contentType != "" {
		mt, _, err := mime.ParseMediaType(contentType)
		if err != nil {
			return "", "", Errorf(EInvalid, "invalid audio content type %q", contentType)
		}
		mediaType = mt
	}

	format := strings.ToLower(strings.TrimPrefix(path.Ext(name), "."))
	if _, ok := audioFormatTypes[format]; !ok {
		f, ok := audioTypeFormats[mediaType]
		if !ok {
			return "", "", Errorf(EInvalid,
				"unsupported audio format (file %q, type %q); supported: %s",
				name, contentType, strings.Join(audioFormats, ", "))
		}
		format = f
		name += "." + format
	}
	if _, known := audioTypeFormats[mediaType]; !known {
		// Empty, application/octet-stream or not an audio type: send the
		// type the extension implies.
		contentType = audioFormatTypes[format]
	}
	return name, contentType, nil
}

// AudioHeadLen is how many leading bytes IsAudio needs to tell a format.
const AudioHeadLen = 12

// IsAudio reports whether head, the first AudioHeadLen bytes of a file
// (fewer if the file is shorter), starts the way files of format (an
// extension AudioFormat accepts) do: a file named .wav that is not WAV
// audio is refused before it is stored or sent anywhere.
func IsAudio(format string, head []byte) bool {
	at := func(off int, sig string) bool {
		return len(head) >= off+len(sig) && string(head[off:off+len(sig)]) == sig
	}
	id3 := at(0, "ID3") // an ID3v2 tag may precede MPEG audio, and FLAC
	mpegFrame := len(head) >= 2 && head[0] == 0xFF && head[1]&0xE0 == 0xE0
	switch format {
	case "wav":
		return (at(0, "RIFF") || at(0, "RF64") || at(0, "BW64")) && at(8, "WAVE")
	case "flac":
		return at(0, "fLaC") || id3
	case "mp3", "mpga":
		return id3 || mpegFrame
	case "mpeg":
		return id3 || mpegFrame || at(0, "\x00\x00\x01\xba") || at(0, "\x00\x00\x01\xb3")
	case "mp4", "m4a":
		// ISO base media: a box size, then its type; files start with
		// ftyp, or with another top-level box in older QuickTime files.
		for _, box := range []string{"ftyp", "moov", "mdat", "free", "skip", "wide"} {
			if at(4, box) {
				return true
			}
		}
		return false
	case "ogg", "oga":
		return at(0, "OggS")
	case "webm":
		return at(0, "\x1a\x45\xdf\xa3") // EBML
	}
	return false
}
