package sqlite

import (
	"context"
	"path/filepath"
	"testing"
)

// TestMappedReadsOnlyWhenAsked: the readers map the file only with
// MappedReads (the viewer); a run's store reads with pread, so the pages
// its report pass touches do not stay in its resident memory.
func TestMappedReadsOnlyWhenAsked(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		opts []Option
		want int64
	}{
		{"default", nil, 0},
		{"MappedReads", []Option{MappedReads()}, 2147418112},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Open(ctx, filepath.Join(t.TempDir(), "e.db"), c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Every pooled reader connection, not just the first.
			conns := make([]interface{ Close() error }, 0, 4)
			for i := 0; i < 4; i++ {
				conn, err := s.reader.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				conns = append(conns, conn)
				var got int64
				if err := conn.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != c.want {
					t.Errorf("reader %d: mmap_size = %d, want %d", i, got, c.want)
				}
			}
			for _, c := range conns {
				c.Close()
			}
		})
	}
}
