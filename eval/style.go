package eval

import (
	"html/template"
	"strings"
)

// Stylesheet is the HTML report's CSS, for other pages drawn in its style.
func Stylesheet() template.CSS {
	_, css, _ := strings.Cut(reportHTML, "<style>")
	css, _, _ = strings.Cut(css, "</style>")
	return template.CSS(css)
}
