package evalrun

import (
	"encoding/json"
	"time"
)

// Dataset is a named collection of items with immutable, numbered versions.
type Dataset struct {
	Name string
	// LatestVersion is the newest version number, starting at 1.
	LatestVersion int
	// ItemCount is the number of items in the latest version.
	ItemCount int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// DatasetVersion describes one immutable version of a dataset.
type DatasetVersion struct {
	Dataset   string
	Version   int
	CreatedAt time.Time
	// ItemCount is the number of items in this version.
	ItemCount int
	// Added, Changed and Removed count the items that differ from the
	// previous version.
	Added, Changed, Removed int
}

// Item is one case of a dataset.
type Item struct {
	// ID identifies the item within its dataset. It is kept when the file
	// gives one and derived deterministically from the content otherwise.
	ID string `json:"id"`
	// Input is what the target receives, any JSON value. Never empty.
	Input json.RawMessage `json:"input"`
	// Expected is the optional expected output; nil when absent.
	Expected json.RawMessage `json:"expected_output,omitempty"`
	// Metadata holds everything else; "tags" (a string or a list of
	// strings) defines cohorts in reports.
	Metadata map[string]any `json:"metadata,omitempty"`
	// ToolMocks answer an agent's tool calls on this item (see [ToolMock]
	// and [Item.MockFor]); nil when the item mocks nothing. omitzero, not
	// omitempty: an exported item keeps [] apart from absent, so that
	// re-importing an export is no change.
	ToolMocks []ToolMock `json:"tool_mocks,omitzero"`
	// ExpectedTrajectory is the tool calls the agent should make, for the
	// trajectory scorer. nil means absent; an empty non-nil list means "no
	// call" and is kept apart by every store.
	ExpectedTrajectory []ExpectedCall `json:"expected_trajectory,omitzero"`
}

// Tags returns the item's metadata.tags as a list: a string tag becomes a
// one-element list, a list keeps its string elements, anything else is
// ignored.
func (it *Item) Tags() []string {
	if it == nil || it.Metadata == nil {
		return nil
	}
	switch v := it.Metadata["tags"].(type) {
	case string:
		return []string{v}
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
