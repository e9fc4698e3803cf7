package otel

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestBatchDefaults: evalrun's queue and batch sizes apply only where the
// user set no OTEL_BSP_* variable (an explicit option would override it),
// and never a batch larger than the user's queue.
func TestBatchDefaults(t *testing.T) {
	const sdkQueue, sdkBatch = 1, 2 // stand-ins for what the SDK read from the variables
	for _, c := range []struct {
		name             string
		env              map[string]string
		wantQ, wantBatch int
	}{
		{"unset", nil, DefaultMaxQueueSize, DefaultMaxExportBatchSize},
		{"queue set", map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "100"}, sdkQueue, sdkBatch},
		{"batch set", map[string]string{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "100"}, DefaultMaxQueueSize, sdkBatch},
		{"both set", map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "10"}, sdkQueue, sdkBatch},
	} {
		o := sdktrace.BatchSpanProcessorOptions{MaxQueueSize: sdkQueue, MaxExportBatchSize: sdkBatch}
		for _, opt := range batchDefaults(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }) {
			opt(&o)
		}
		if o.MaxQueueSize != c.wantQ || o.MaxExportBatchSize != c.wantBatch {
			t.Errorf("%s: queue %d batch %d, want %d %d", c.name, o.MaxQueueSize, o.MaxExportBatchSize, c.wantQ, c.wantBatch)
		}
	}
	if DefaultMaxExportBatchSize > DefaultMaxQueueSize {
		t.Error("the default batch is larger than the default queue")
	}
}
