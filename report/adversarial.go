package report

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The normalized severities of adversarial items.
const (
	SeverityCritical = "critical"
	SeverityHigh     = "high"
	SeverityMedium   = "medium"
	SeverityLow      = "low"
	SeverityUnknown  = "unknown"
)

// Lengths past which adversarial strings are cut.
const (
	maxCategoryLen  = 64
	maxLabelLen     = 200
	maxFrameworkLen = 64
	maxFrameworks   = 16
)

// AdversarialInfo is the safe, normalized subset of an item's
// metadata.adversarial: nothing else of it reaches a report.
type AdversarialInfo struct {
	// Category is lower case, made of [a-z0-9_.:/-] (other characters
	// become "_"), at most 64 bytes; "uncategorized" when absent.
	Category string `json:"category"`
	// Label is free text without control characters, at most 200
	// characters; nil when absent.
	Label *string `json:"label"`
	// Severity is critical, high, medium, low or unknown.
	Severity string `json:"severity"`
	// Frameworks are the named frameworks (e.g. "OWASP-LLM01"), trimmed,
	// without control characters, deduplicated and sorted; never nil.
	Frameworks []string `json:"frameworks"`
}

// Adversarial is the report's adversarial block, present when some item
// carries metadata.adversarial.
type Adversarial struct {
	// Count is the number of results whose item carries the block.
	Count int `json:"count"`
	// Categories aggregates those results per category, in byte order.
	Categories AdversarialTable `json:"categories"`
	// Severities counts those results per severity.
	Severities SeverityCounts `json:"severities"`
	// Frameworks counts those results per framework.
	Frameworks map[string]int `json:"frameworks"`
}

// SeverityCounts counts adversarial results per severity.
type SeverityCounts struct {
	Critical int `json:"critical"`
	High     int `json:"high"`
	Medium   int `json:"medium"`
	Low      int `json:"low"`
	Unknown  int `json:"unknown"`
}

func (s *SeverityCounts) add(sev string) {
	switch sev {
	case SeverityCritical:
		s.Critical++
	case SeverityHigh:
		s.High++
	case SeverityMedium:
		s.Medium++
	case SeverityLow:
		s.Low++
	default:
		s.Unknown++
	}
}

// AdversarialCategory aggregates the adversarial results of one category.
type AdversarialCategory struct {
	// Category is the key of the JSON object.
	Category string `json:"-"`
	Count    int    `json:"count"`
	// Failed counts the results on which the target failed (a guard's
	// tripwire included).
	Failed  int         `json:"failed"`
	Scorers ScorerTable `json:"scorers"`
}

// AdversarialTable is a list of categories written as a JSON object.
type AdversarialTable = keyedTable[AdversarialCategory, *AdversarialCategory]

// adversarialOf normalizes metadata["adversarial"]: an object with optional
// category, label, severity and frameworks (a string or a list; "framework"
// is accepted too), or true. Anything else gives nil.
func adversarialOf(meta map[string]any) *AdversarialInfo {
	if meta == nil {
		return nil
	}
	var m map[string]any
	switch v := meta["adversarial"].(type) {
	case map[string]any:
		m = v
	case bool:
		if !v {
			return nil
		}
	default:
		return nil
	}
	info := &AdversarialInfo{Category: "uncategorized", Severity: SeverityUnknown, Frameworks: []string{}}
	if s, ok := m["category"].(string); ok {
		if c := normCategory(s); c != "" {
			info.Category = c
		}
	}
	if s, ok := m["label"].(string); ok {
		if l := cleanText(s, maxLabelLen); l != "" {
			info.Label = &l
		}
	}
	if s, ok := m["severity"].(string); ok {
		info.Severity = normSeverity(s)
	}
	fw := m["frameworks"]
	if fw == nil {
		fw = m["framework"]
	}
	var names []string
	switch v := fw.(type) {
	case string:
		names = []string{v}
	case []string:
		names = v
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok {
				names = append(names, s)
			}
		}
	}
	for _, n := range names {
		if n = cleanText(n, maxFrameworkLen); n != "" && !slices.Contains(info.Frameworks, n) {
			info.Frameworks = append(info.Frameworks, n)
		}
		if len(info.Frameworks) == maxFrameworks {
			break
		}
	}
	slices.Sort(info.Frameworks)
	return info
}

func normCategory(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= maxCategoryLen {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', strings.ContainsRune("_.:/-", r):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

func normSeverity(s string) string {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "critical", "crit":
		return SeverityCritical
	case "high":
		return SeverityHigh
	case "medium", "med", "moderate":
		return SeverityMedium
	case "low", "info", "informational":
		return SeverityLow
	}
	return SeverityUnknown
}

// cleanText drops control and invalid characters, trims spaces and cuts
// the text to max runes.
func cleanText(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) {
			r = ' '
		}
		if n == max {
			break
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}
