package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"input", "input", 0},
		{"inptu", "input", 2},
		{"expcted", "expected", 1},
		{"kitten", "sitting", 3},
		{"exact", "exakt", 1},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestKeyAndNearest(t *testing.T) {
	keys := []string{"id", "input", "expected_output", "metadata"}
	for key, want := range map[string]string{
		"Expected-Output": "expected_output", "expected": "expected_output", "inptu": "input",
		"meta_data": "metadata", "ID": "id", "x": "", "": "", "label": "",
	} {
		if got := Key(key, keys); got != want {
			t.Errorf("Key(%q) = %q, want %q", key, got, want)
		}
	}
	kinds := []string{"exact", "contains", "regex"}
	for word, want := range map[string]string{"Exakt": "exact", "contain": "contains", "judge": "", "": ""} {
		if got := Nearest(word, kinds); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", word, got, want)
		}
	}
	if got := Nearest("exact", nil); got != "" {
		t.Errorf("Nearest with nothing known = %q, want \"\"", got)
	}
}
