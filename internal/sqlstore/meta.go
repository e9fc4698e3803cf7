package sqlstore

import (
	"maps"

	"github.com/evalrun/evalrun/dataset"
)

// metaCacheSize bounds the distinct metadata values a [MetaCache] keeps.
const metaCacheSize = 64

// MetaCache decodes item metadata (JSON objects), decoding each distinct
// value once: datasets repeat a few metadata values (tags, a difficulty)
// over many items. Every call returns a new deep copy, so callers may
// modify what they get. The zero value is ready; it is not safe for
// concurrent use.
type MetaCache struct {
	m map[string]map[string]any
}

// Decode is [dataset.UnmarshalMetadata] through the cache.
func (c *MetaCache) Decode(b []byte) (map[string]any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if v, ok := c.m[string(b)]; ok {
		return copyJSONObject(v), nil
	}
	v, err := dataset.UnmarshalMetadata(b)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = make(map[string]map[string]any, metaCacheSize)
	}
	if len(c.m) < metaCacheSize {
		c.m[string(b)] = copyJSONObject(v)
	}
	return v, nil
}

// copyJSONObject deeply copies a decoded JSON object.
func copyJSONObject(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := maps.Clone(m)
	for k, v := range out {
		out[k] = copyJSON(v)
	}
	return out
}

// copyJSON deeply copies a value decoded by encoding/json into an any.
func copyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return copyJSONObject(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyJSON(e)
		}
		return out
	default: // nil, bool, float64, string, json.Number: immutable
		return v
	}
}
