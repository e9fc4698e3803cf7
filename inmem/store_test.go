package inmem_test

import (
	"testing"

	"github.com/evalrun/evalrun"
	"github.com/evalrun/evalrun/inmem"
	"github.com/evalrun/evalrun/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) evalrun.Store { return inmem.New() })
}
