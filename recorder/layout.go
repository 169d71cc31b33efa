package recorder

// layout indents compact JSON by two spaces, except where a diff reads
// better otherwise: each element of an "events" array stays on one line as
// written (one SSE event per line, its data byte for byte), and the value
// of "split_at" stays on one line.
func layout(src []byte) []byte {
	l := &layouter{src: src, out: make([]byte, 0, len(src)+len(src)/4)}
	l.value(0, modeIndent)
	return l.out
}

type layoutMode uint8

const (
	modeIndent  layoutMode = iota // objects and arrays spread over lines
	modePerLine                   // array: one compact element per line
	modeInline                    // the whole value on one line
)

var layoutModes = map[string]layoutMode{
	`"events"`:   modePerLine,
	`"split_at"`: modeInline,
}

type layouter struct {
	src []byte
	i   int
	out []byte
}

func (l *layouter) newline(depth int) {
	l.out = append(l.out, '\n')
	for range depth {
		l.out = append(l.out, ' ', ' ')
	}
}

// value lays out the value starting at l.i.
func (l *layouter) value(depth int, mode layoutMode) {
	c := l.src[l.i]
	if (c != '{' && c != '[') || mode == modeInline {
		l.copyValue()
		return
	}
	closer := byte('}')
	if c == '[' {
		closer = ']'
	}
	l.out = append(l.out, c)
	l.i++
	if l.src[l.i] == closer {
		l.out = append(l.out, closer)
		l.i++
		return
	}
	for {
		l.newline(depth + 1)
		childMode := modeIndent
		if c == '{' {
			start := l.i
			l.copyValue() // the key
			childMode = layoutModes[string(l.src[start:l.i])]
			l.i++ // ':'
			l.out = append(l.out, ':', ' ')
		} else if mode == modePerLine {
			childMode = modeInline
		}
		l.value(depth+1, childMode)
		if l.src[l.i] == ',' {
			l.out = append(l.out, ',')
			l.i++
			continue
		}
		l.newline(depth)
		l.out = append(l.out, closer)
		l.i++
		return
	}
}

// copyValue copies one compact value (string, literal, object or array)
// verbatim and moves past it.
func (l *layouter) copyValue() {
	start := l.i
	depth := 0
	inString := false
	for ; l.i < len(l.src); l.i++ {
		c := l.src[l.i]
		if inString {
			switch c {
			case '\\':
				l.i++
			case '"':
				inString = false
				if depth == 0 {
					l.i++
					l.out = append(l.out, l.src[start:l.i]...)
					return
				}
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				l.out = append(l.out, l.src[start:l.i]...)
				return
			}
			depth--
			if depth == 0 {
				l.i++
				l.out = append(l.out, l.src[start:l.i]...)
				return
			}
		case ',':
			if depth == 0 {
				l.out = append(l.out, l.src[start:l.i]...)
				return
			}
		}
	}
	l.out = append(l.out, l.src[start:l.i]...)
}
