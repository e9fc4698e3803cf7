package report

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// keyedTable is a list of elements written as a JSON object keyed by each
// element's key, in the list's order. Reading an object keeps its key
// order; a JSON null reads as an empty table. The report's tables
// ([ScorerTable], [CohortTable], [ItemScores], [DeltaTable],
// [AdversarialTable], [VariantScorerTable], [BaselineTable],
// [VariantResults]) are instances.
type keyedTable[T any, P keyedElem[T]] []T

// keyedElem constrains the elements of a [keyedTable]: a field of the
// element, left out of its own JSON, holds its key.
type keyedElem[T any] interface {
	*T
	// tableKey returns the field that holds the element's key.
	tableKey() *string
}

// Get returns the element with the given key (a scorer's name, a
// cohort's key (see [CohortKey]), a category, a variant), or nil.
func (t keyedTable[T, P]) Get(key string) *T {
	for i := range t {
		if *P(&t[i]).tableKey() == key {
			return &t[i]
		}
	}
	return nil
}

// MarshalJSON writes the table as an object in order.
func (t keyedTable[T, P]) MarshalJSON() ([]byte, error) {
	return marshalObject(len(t), func(i int) (string, any) { return *P(&t[i]).tableKey(), &t[i] })
}

// UnmarshalJSON reads an object, keeping its key order.
func (t *keyedTable[T, P]) UnmarshalJSON(data []byte) error {
	*t = keyedTable[T, P]{}
	return unmarshalObject(data, func(key string, raw json.RawMessage) error {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		*P(&v).tableKey() = key
		*t = append(*t, v)
		return nil
	})
}

func (s *ScorerStats) tableKey() *string         { return &s.Name }
func (c *Cohort) tableKey() *string              { return &c.Key }
func (s *ItemScore) tableKey() *string           { return &s.Scorer }
func (d *ScorerDelta) tableKey() *string         { return &d.Name }
func (c *AdversarialCategory) tableKey() *string { return &c.Category }
func (d *BaselineDelta) tableKey() *string       { return &d.Name }
func (r *VariantResult) tableKey() *string       { return &r.Variant }

// A VariantScorer's key is its ScorerStats' Name (the promoted tableKey).

// marshalObject writes n key/value pairs as a JSON object in order.
func marshalObject(n int, kv func(i int) (string, any)) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i := range n {
		k, v := kv(i)
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		buf.Write(kb)
		buf.WriteByte(':')
		vb, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// unmarshalObject calls fn with each member of a JSON object, in order. A
// JSON null gives no member.
func unmarshalObject(data []byte, fn func(key string, raw json.RawMessage) error) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("report: expected a JSON object, got %v", tok)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		if err := fn(key, raw); err != nil {
			return fmt.Errorf("report: %q: %w", key, err)
		}
	}
	_, err = dec.Token()
	return err
}
