package dataset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/evalrun/evalrun/internal/utf8check"
)

// Limits of a dataset file. Datasets arrive in pull requests from people
// the runner does not trust, on small CI machines: the readers hold one
// item's bytes at a time besides the items read, and refuse an item past a
// limit with its line (docs/suite.md#limits).
const (
	// MaxItemBytes is the longest JSONL line, JSON array element or CSV
	// record. An item is held whole in memory, stored, and shown in reports
	// and the viewer; a long document with its expected output is well
	// under it.
	MaxItemBytes = 16 << 20
	// MaxDepth is the deepest nesting of objects and arrays in an item,
	// its own object counting 1. encoding/json allows 10,000; every
	// renderer of a value pays for each level.
	MaxDepth = 128
)

// errTooLong stops a reader at an item longer than MaxItemBytes.
var errTooLong = errors.New("item too long")

// tooLong is the problem of an item longer than MaxItemBytes.
func tooLong(file string, line int, what string) error {
	return errorf(file, line, "%s longer than %d bytes (the limit, %d MiB): split the item or move large content out of the dataset",
		what, MaxItemBytes, MaxItemBytes>>20)
}

// readLine returns the next line of r without its end, at most max bytes
// (errTooLong past that, reading no further), and io.EOF with the last
// line when r ends.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		n := len(line)
		if bytes.HasSuffix(line, []byte("\n")) {
			n--
		}
		if n > max {
			return nil, errTooLong
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			return line, err
		}
		return line[:n], nil
	}
}

// Lines reads a JSONL file line by line within the limits of a dataset
// line: at most MaxItemBytes (reading no further), valid UTF-8 and nested
// at most MaxDepth. The other JSONL inputs (saved outputs) read through it
// take what a dataset takes and are refused alike, with file and line.
type Lines struct {
	r    *bufio.Reader
	file string
	line int
	off  int64
	done bool
}

// NewLines returns a Lines reading r, the file named file, from its offset
// off; at offset 0 it skips a UTF-8 byte order mark.
func NewLines(r io.Reader, file string, off int64) *Lines {
	br := bufio.NewReader(r)
	if b, _ := br.Peek(3); off == 0 && bytes.Equal(b, []byte("\xef\xbb\xbf")) { // a UTF-8 byte order mark
		n, _ := br.Discard(3)
		off = int64(n)
	}
	return &Lines{r: br, file: file, off: off}
}

// Next returns the next line without its end and surrounding space (empty
// for a blank line) and its number; io.EOF after the last line. A line
// past a limit is an [*Error].
func (l *Lines) Next() ([]byte, int, error) {
	if l.done {
		return nil, l.line, io.EOF
	}
	l.line++
	b, err := readLine(l.r, MaxItemBytes)
	switch {
	case errors.Is(err, errTooLong):
		return nil, l.line, tooLong(l.file, l.line, "line")
	case errors.Is(err, io.EOF):
		l.done = true
	case err != nil:
		return nil, l.line, fmt.Errorf("read %s: %w", l.file, err)
	}
	if err := checkUTF8(l.file, b, l.line, l.off); err != nil {
		return nil, l.line, err
	}
	l.off += int64(len(b)) + 1
	b = bytes.TrimSpace(b)
	if err := checkDepth(b); err != nil {
		return nil, l.line, errorf(l.file, l.line, "%v", err)
	}
	if l.done && len(b) == 0 {
		return nil, l.line, io.EOF
	}
	return b, l.line, nil
}

// checkUTF8 returns an error naming the line and the file offset of the
// first invalid UTF-8 byte of b, which starts at offset off on line line.
func checkUTF8(file string, b []byte, line int, off int64) error {
	i := utf8check.FirstInvalid(b)
	if i < 0 {
		return nil
	}
	line += bytes.Count(b[:i], []byte("\n"))
	return errorf(file, line, "invalid UTF-8: byte 0x%02x at offset %d of the file (save the file as UTF-8)", b[i], off+int64(i))
}

// depth returns the deepest nesting of objects and arrays in the JSON
// text b (valid or not), strings skipped.
func depth(b []byte) int {
	d, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString && c == '\\':
			i++
		case inString:
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			d++
			deepest = max(deepest, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}

// checkDepth returns an error when the JSON text b nests deeper than
// MaxDepth.
func checkDepth(b []byte) error {
	if d := depth(b); d > MaxDepth {
		return fmt.Errorf("nested %d levels deep (the limit is %d): flatten the value", d, MaxDepth)
	}
	return nil
}

// window passes a dataset file to a decoder (JSON array, CSV) while
// keeping what places a problem: the bytes from the start of the current
// item on, and the line at that start. It passes at most MaxItemBytes
// past the start (then errTooLong), so the decoder's buffer is bounded
// whatever the file holds. Call advance after each item.
type window struct {
	r     io.Reader
	file  string
	base  int64  // file offset of the decoder's offset 0 (a byte order mark)
	start int64  // decoder offset of the current item's start
	line  int    // line at start
	buf   []byte // bytes passed from start on
}

func newWindow(r io.Reader, file string, base int64) *window {
	return &window{r: r, file: file, base: base, line: 1}
}

func (w *window) Read(p []byte) (int, error) {
	room := MaxItemBytes + 1 - len(w.buf)
	if room <= 0 {
		return 0, errTooLong
	}
	if len(p) > room {
		p = p[:room]
	}
	n, err := w.r.Read(p)
	w.buf = append(w.buf, p[:n]...)
	return n, err
}

// advance moves the current item's start to off (a decoder offset, at or
// after start), checking that the bytes passed over are UTF-8.
func (w *window) advance(off int64) error {
	n := min(int(off-w.start), len(w.buf))
	if err := checkUTF8(w.file, w.buf[:n], w.line, w.base+w.start); err != nil {
		return err
	}
	w.line += bytes.Count(w.buf[:n], []byte("\n"))
	w.buf = append(w.buf[:0], w.buf[n:]...)
	w.start += int64(n)
	return nil
}

// itemLine returns the line where the current item begins: past the
// spaces (and a separating comma) before it.
func (w *window) itemLine() int {
	lead := len(w.buf) - len(bytes.TrimLeft(w.buf, " \t\r\n,"))
	return w.line + bytes.Count(w.buf[:lead], []byte("\n"))
}

// syntaxLine returns the line of a JSON syntax error in the current item
// (the decoder's offsets are not the file's): its own, found by parsing the
// item's bytes again, else the item's first line.
func (w *window) syntaxLine() int {
	lead := len(w.buf) - len(bytes.TrimLeft(w.buf, " \t\r\n,"))
	var v any
	var se *json.SyntaxError
	if err := json.Unmarshal(w.buf[lead:], &v); errors.As(err, &se) && se.Offset > 0 {
		at := min(lead+int(se.Offset)-1, len(w.buf))
		return w.line + bytes.Count(w.buf[:at], []byte("\n"))
	}
	return w.itemLine()
}
