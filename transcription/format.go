package transcription

import (
	"mime"
	"path"
	"strings"

	"github.com/brainwire/brainwire"
)

// formats lists the file extensions the service transcribes.
var formats = []string{"flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm"}

// formatTypes maps each format to the content type sent for it when the
// upload named none (or only application/octet-stream).
var formatTypes = map[string]string{
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

// typeFormats maps the content types phones and browsers give audio to a
// format, for uploads whose file name has no usable extension.
var typeFormats = map[string]string{
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

// AudioFormat checks that an upload is in a format the service takes and
// returns the file name and content type to send. The service goes by the
// file name's extension, so one is added when only the content type tells
// the format.
func AudioFormat(filename, contentType string) (string, string, error) {
	name := path.Base(strings.ReplaceAll(filename, `\`, "/"))
	if name == "." || name == "/" {
		name = "audio"
	}
	mediaType := ""
	if contentType != "" {
		mt, _, err := mime.ParseMediaType(contentType)
		if err != nil {
			return "", "", brainwire.Errorf(brainwire.EInvalid, "invalid audio content type %q", contentType)
		}
		mediaType = mt
	}

	format := strings.ToLower(strings.TrimPrefix(path.Ext(name), "."))
	if _, ok := formatTypes[format]; !ok {
		f, ok := typeFormats[mediaType]
		if !ok {
			return "", "", brainwire.Errorf(brainwire.EInvalid,
				"unsupported audio format (file %q, type %q); supported: %s",
				name, contentType, strings.Join(formats, ", "))
		}
		format = f
		name += "." + format
	}
	if _, known := typeFormats[mediaType]; !known {
		// Empty, application/octet-stream or not an audio type: send the
		// type the extension implies.
		contentType = formatTypes[format]
	}
	return name, contentType, nil
}
