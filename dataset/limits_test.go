package dataset_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/dataset"
)

// endless is an io.Reader of one byte for ever, counting what is read.
type endless struct {
	b     byte
	chunk []byte
	read  int64
}

func (e *endless) Read(p []byte) (int, error) {
	if len(e.chunk) == 0 {
		e.chunk = bytes.Repeat([]byte{e.b}, 64<<10)
	}
	n := copy(p, e.chunk)
	e.read += int64(n)
	return n, nil
}

// TestEndlessItems reads files whose item never ends (a 3 GB line without
// a newline, as far as the reader can tell): each is refused at the
// item's line having read little more than MaxItemBytes of it (before the
// limit, the reader read until memory ran out).
func TestEndlessItems(t *testing.T) {
	for _, tc := range []struct {
		name, file, head string
		b                byte
		want             string
	}{
		{"jsonl line", "data.jsonl", "{\"input\": \"ok\"}\n{\"input\": \"", 'a',
			"data.jsonl:2: line longer than 16777216 bytes (the limit, 16 MiB): split the item or move large content out of the dataset"},
		{"json element", "data.json", "[\n{\"input\": \"ok\"},\n  {\"input\": \"", 'a',
			"data.json:3: an item longer than 16777216 bytes (the limit, 16 MiB): split the item or move large content out of the dataset"},
		{"json spaces", "data.json", "[{\"input\": 1},", ' ',
			"data.json:1: an item longer than 16777216 bytes (the limit, 16 MiB): split the item or move large content out of the dataset"},
		{"csv record", "data.csv", "id,input\na,ok\nb,\"", 'a',
			"data.csv:3: a record longer than 16777216 bytes (the limit, 16 MiB): split the item or move large content out of the dataset"},
		{"csv multi-line record", "data.csv", "id,input\nb,\"", '\n',
			"data.csv:2: a record longer than 16777216 bytes (the limit, 16 MiB): split the item or move large content out of the dataset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			format, _ := dataset.FormatOf(tc.file)
			src := &endless{b: tc.b}
			items, err := dataset.Read(io.MultiReader(strings.NewReader(tc.head), src), tc.file, format)
			if err == nil || err.Error() != tc.want || !errors.Is(err, evalrun.ErrInvalid) || items != nil {
				t.Fatalf("err = %v (%d items), want %q", err, len(items), tc.want)
			}
			if src.read > 2*dataset.MaxItemBytes {
				t.Errorf("read %d bytes of the endless item, want about %d", src.read, dataset.MaxItemBytes)
			}
		})
	}
}

// An item of exactly MaxItemBytes is read.
func TestItemAtLimit(t *testing.T) {
	pad := func(head, tail string) string {
		return head + strings.Repeat("a", dataset.MaxItemBytes-len(head)-len(tail)) + tail
	}
	for _, tc := range []struct{ file, content string }{
		{"data.jsonl", pad(`{"input": "`, `"}`) + "\n"},
		{"data.json", "[" + pad(`{"input": "`, `"}`) + "]"},
		{"data.csv", "input\n" + pad("", "") + "\n"},
	} {
		items, err := read(t, tc.file, tc.content)
		if err != nil || len(items) != 1 {
			t.Errorf("%s: %d items, %v", tc.file, len(items), err)
		}
	}
}

func TestInvalidUTF8AndDepth(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tc := range []struct{ name, file, content, want string }{
		{"jsonl", "data.jsonl", "{\"input\": \"ok\"}\n{\"input\": \"b\xffd\"}\n",
			"data.jsonl:2: invalid UTF-8: byte 0xff at offset 28 of the file (save the file as UTF-8)"},
		{"jsonl key", "data.jsonl", "{\"input\": 1, \"metadata\": {\"\xc3\": 1}}\n",
			"data.jsonl:1: invalid UTF-8: byte 0xc3 at offset 27 of the file (save the file as UTF-8)"},
		{"jsonl after a byte order mark", "data.jsonl", "\xef\xbb\xbf{\"input\": \"\xe2\x82\"}\n",
			"data.jsonl:1: invalid UTF-8: byte 0xe2 at offset 14 of the file (save the file as UTF-8)"},
		{"json", "data.json", "[\n {\"input\": \"ok\"},\n {\"input\": \"b\xffd\"}\n]",
			"data.json:3: invalid UTF-8: byte 0xff at offset 33 of the file (save the file as UTF-8)"},
		{"json multi-line item", "data.json", "[{\"input\": \"ok\",\n\"expected_output\":\n \"\xff\"}]",
			"data.json:3: invalid UTF-8: byte 0xff at offset 38 of the file (save the file as UTF-8)"},
		{"csv", "data.csv", "id,input\na,ok\nb,\"x\ny\xfe\"\n",
			"data.csv:4: invalid UTF-8: byte 0xfe at offset 20 of the file (save the file as UTF-8)"},
		{"csv header", "data.csv", "id,input,s\xffurce\na,ok,x\n",
			"data.csv:1: invalid UTF-8: byte 0xff at offset 10 of the file (save the file as UTF-8)"},
		{"jsonl too deep", "data.jsonl", "{\"input\": 1}\n{\"input\": " + nest(dataset.MaxDepth) + "}\n",
			"data.jsonl:2: nested 129 levels deep (the limit is 128): flatten the value"},
		{"jsonl deeper than encoding/json allows", "data.jsonl", "{\"input\": " + nest(20000) + "}\n",
			"data.jsonl:1: nested 20001 levels deep (the limit is 128): flatten the value"},
		{"json too deep", "data.json", "[{\"input\": 1},\n{\"expected_output\": " + nest(dataset.MaxDepth) + ", \"input\": 1}]",
			"data.json:2: nested 129 levels deep (the limit is 128): flatten the value"},
		{"csv too deep", "data.csv", "input\n" + nest(dataset.MaxDepth+1) + "\n",
			`data.csv:2: "input": nested 129 levels deep (the limit is 128): flatten the value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items, err := read(t, tc.file, tc.content)
			if err == nil || err.Error() != tc.want || !errors.Is(err, evalrun.ErrInvalid) || items != nil {
				t.Fatalf("err = %v (%d items), want %q", err, len(items), tc.want)
			}
		})
	}
	// At the depth limit, and with valid multi-byte text, items are read.
	for _, tc := range []struct{ file, content string }{
		{"data.jsonl", "{\"input\": " + nest(dataset.MaxDepth-1) + ", \"expected_output\": \"é 😀\"}\n"},
		{"data.json", "[{\"input\": " + nest(dataset.MaxDepth-1) + ", \"expected_output\": \"é 😀\"}]"},
		{"data.csv", "input,expected_output\n" + nest(dataset.MaxDepth) + ",é 😀\n"},
	} {
		if items, err := read(t, tc.file, tc.content); err != nil || len(items) != 1 {
			t.Errorf("%s: %d items, %v", tc.file, len(items), err)
		}
	}
}
