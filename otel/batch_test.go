package otel

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestBatchDefaults: evalrun's queue size applies only when the user set
// no OTEL_BSP_MAX_QUEUE_SIZE (an explicit option would override it), and
// the batch size is always what the SDK read.
func TestBatchDefaults(t *testing.T) {
	const sdkQueue, sdkBatch = 1, 2 // stand-ins for what the SDK read from the variables
	for _, c := range []struct {
		name  string
		env   map[string]string
		wantQ int
	}{
		{"unset", nil, DefaultMaxQueueSize},
		{"queue set", map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "100"}, sdkQueue},
		{"batch set", map[string]string{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "100"}, DefaultMaxQueueSize},
	} {
		o := sdktrace.BatchSpanProcessorOptions{MaxQueueSize: sdkQueue, MaxExportBatchSize: sdkBatch}
		for _, opt := range batchDefaults(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }) {
			opt(&o)
		}
		if o.MaxQueueSize != c.wantQ || o.MaxExportBatchSize != sdkBatch {
			t.Errorf("%s: queue %d batch %d, want %d %d", c.name, o.MaxQueueSize, o.MaxExportBatchSize, c.wantQ, sdkBatch)
		}
	}
	if DefaultMaxQueueSize < sdktrace.DefaultMaxExportBatchSize {
		t.Error("the default queue is smaller than a batch")
	}
}
